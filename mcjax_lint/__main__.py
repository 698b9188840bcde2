import sys

from mcjax_lint.cli import main

sys.exit(main())
