"""What the documentation in ``docs/`` shows that is generated from the code, never typed by hand."""
