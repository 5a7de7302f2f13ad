from rung.cli import main

main()
