import sys

from ffcode.cli import main

sys.exit(main())
