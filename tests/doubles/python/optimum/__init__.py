"""Test stand-in namespace for Hugging Face ``optimum`` (only ``optimum.neuron`` is stood in for)."""
