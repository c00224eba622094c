"""NeuronBench: which instance should this model train or serve on, and at what cost?"""
__version__ = "0.1.0"
