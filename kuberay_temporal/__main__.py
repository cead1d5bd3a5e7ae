"""Allow `python -m kuberay_temporal`."""

import sys

from kuberay_temporal.cli import main

sys.exit(main())
