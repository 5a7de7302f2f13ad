"""The rungs the controller computes from stored figures, never running solution code: roofline
(`roofline.py`), dump (`sass.py`, `sass_source.py`) and trace (`trace.py`)."""
