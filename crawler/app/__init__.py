"""The application: the flows as a library (``runner``), the command line (``cli``: parsing and printing
only), the checks on its arguments (``arguments``) and the demo (``demo``)."""
