"""The benchmark workloads (training and traced inference), run inside worker processes."""
