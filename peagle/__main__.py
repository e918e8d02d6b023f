import sys

from peagle.cli import main

sys.exit(main())
