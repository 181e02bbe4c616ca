"""`python -m assay.rl_client ...` is `assay train ...`."""

import sys

from assay.rl_client.runs.command import main

sys.exit(main())
