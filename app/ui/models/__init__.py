"""Qt-free state the views draw from (live runs as ring buffers)."""
