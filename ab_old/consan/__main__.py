import sys

from consan.cli import main

sys.exit(main())
