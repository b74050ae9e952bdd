"""`python3 -m fiopack ARGS` is `fio-pack ARGS`."""
import sys

from fiopack.cli import main

sys.exit(main())
