"""Exceptions raised by fastgemm.

Every error fastgemm raises derives from :class:`FastgemmError` and also from the
built-in class a Python user would expect, so ``except ValueError`` keeps working.
The native core raises the same classes with the same messages.
"""


class FastgemmError(Exception):
    """Base class of every fastgemm error."""


class ShapeError(FastgemmError, ValueError):
    """Operand ranks, shapes or leading dimensions do not fit the problem."""


class DTypeError(FastgemmError, TypeError):
    """An operand is not float32."""


class ConstraintError(FastgemmError, ValueError):
    """The problem violates a registered constraint of the chosen kernel."""


class NotFoundError(FastgemmError, KeyError):
    """No kernel or backend has that name."""

    def __str__(self):  # KeyError would show the message in quotes
        return str(self.args[0]) if self.args else ""


class BackendUnavailableError(FastgemmError, RuntimeError):
    """The backend exists but cannot run on this machine (the message says why)."""


class KernelError(FastgemmError, RuntimeError):
    """A kernel failed on its device, or was interrupted."""


class ArgumentError(FastgemmError, ValueError):
    """An argument other than an operand has a value out of its range, or one that
    contradicts another argument (``beta != 0`` without ``C``, ``iters=0``)."""


class ArgumentTypeError(FastgemmError, TypeError):
    """An argument other than an operand's element type is of the wrong kind (a string
    where a flag belongs, a list where an array written in place belongs)."""


class OutOfMemoryError(FastgemmError, MemoryError):
    """The request needs more host or device memory than is available; the message
    gives both amounts where they are known."""


__all__ = [
    "FastgemmError",
    "ShapeError",
    "DTypeError",
    "ConstraintError",
    "NotFoundError",
    "BackendUnavailableError",
    "KernelError",
    "ArgumentError",
    "ArgumentTypeError",
    "OutOfMemoryError",
]
