"""The serve workload's parts: a server's command line and life, prompts, the SSE client and the load.

Stdlib only at module level and Python 3.8 (the agent's rules); torch/transformers/tokenizers are imported
inside the one function that writes a model folder for ``transformers serve``.
"""
