"""Exit statuses of the `consan` commands (like compute-sanitizer's --error-exitcode)."""

from __future__ import annotations

EXIT_CLEAN = 0  # nothing found
EXIT_VIOLATIONS = 1  # violations found
EXIT_ERROR = 2  # usage or tool error, or the checked program faulted
