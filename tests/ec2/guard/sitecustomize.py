"""The EC2 tests' network guard inside CLI subprocesses: connect() only to the hosts the test allows.

Python imports ``sitecustomize`` at start-up from the path; the EC2 tests put this
folder first on PYTHONPATH of the ``neuronbench`` processes they start, with
NEURONBENCH_TEST_ALLOW_HOSTS=127.0.0.0/8, so a CLI process can never reach an
address moto made up.
"""
import os

_allowed = os.environ.get("NEURONBENCH_TEST_ALLOW_HOSTS")
if _allowed:
    import netguard

    netguard.install(_allowed.split(","))
