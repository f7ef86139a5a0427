"""Text of lecture pages: visible blocks, normalization and the lecture's own content."""
