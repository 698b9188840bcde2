import sys

from runtime_guard.cli import main

sys.exit(main())
