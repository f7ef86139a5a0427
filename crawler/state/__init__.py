"""What a crawl keeps between commands, in its state directory: the layout (``layout.StateDir``), the
append-only stage (``stage``), the evidence a withdrawal needs (``withdrawals``), and the file helpers they
share (``fsutil``: atomic writes, the one lock, damaged files; ``paths``: checks on names and folders)."""
