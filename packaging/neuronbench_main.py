"""The frozen app's entry point: the same composition root as ``python -m app``."""
import sys

from app.__main__ import main

sys.exit(main())
