"""`python -m assay.bench ...`: the same as `assay bench ...`."""

import sys

from assay.bench.command import main

sys.exit(main())
