"""Errors raised by overlap-pipeline, each carrying the process exit code the CLI uses.

Exit codes (documented in the README):

| code | meaning |
|------|---------|
| 0 | success (``compare``: no alarm) |
| 1 | ``compare`` raised an alarm |
| 2 | bad usage, configuration or input data (:class:`InputError`, :class:`ConfigError`,
  :class:`SignatureMismatchError`); an optional extra that is not installed
  (:class:`MissingExtraError`: a set-up problem a retry cannot fix) |
| 3 | the output is in the way: a complete output and no ``--overwrite``, anything else than
  a complete overlap output, another run holding its lock (:class:`OutputExistsError`) |
| 4 | an execution failure outside the input's control: Ray, workers, storage
  (:class:`ExecutionError`); a result the CLI cannot write to stdout (a full disk; a
  closed pipe keeps the command's code) |
| 130, 143 | stopped by Ctrl-C or SIGTERM (the CLI, after clean-up) |

Every class takes ``(message, *, keyword=...)`` so that it survives pickling through Ray
(``BaseException.__reduce__`` re-calls the class with ``self.args``).
"""

from __future__ import annotations


class PipelineError(Exception):
    """Base class of every error this package raises on purpose.

    Args:
        message: one line that names the file, column or example ids at fault.
        hint: optional second sentence telling the user what to do.

    """

    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __reduce__(self):  # noqa: D105 - keep keyword arguments through pickling (Ray)
        return (_rebuild, (type(self), self.message, self.__dict__.copy()))

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"


def _rebuild(cls: type[PipelineError], message: str, state: dict) -> PipelineError:
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    err.__dict__.update(state)
    return err


class ConfigError(PipelineError):
    """An unknown or invalid setting: metric, tokenizer, option value or config key."""

    exit_code = 2


class MissingExtraError(ConfigError):
    """An option needs an optional extra whose package is not installed (exit 2).

    A set-up problem that running the command again cannot fix (never exit 4, which
    schedulers retry): ``--engine ray`` without Ray, ``publish --delta`` without
    ``deltalake``, ``--language chinese`` without the multilingual packages. The hint is the
    ``pip install`` line.
    """

    exit_code = 2


class InputError(PipelineError):
    """Input data that cannot be scored as given: missing files, columns, ids, bad types."""

    exit_code = 2


class SignatureMismatchError(InputError):
    """Two runs scored with different settings, so their scores are not comparable.

    Raised by ``overlap compare`` when the signatures differ in tokenizer, stemmer, metrics,
    case or multi-reference rule.
    """

    exit_code = 2


class OutputExistsError(PipelineError):
    """The output is in the way (exit 3).

    A complete run without overwrite, anything that is not a complete overlap output,
    another run's lock, or a staged file of another run.
    """

    exit_code = 3


class ExecutionError(PipelineError):
    """A failure of the execution environment (Ray cluster, workers, storage)."""

    exit_code = 4


def did_you_mean(name: str, choices: list[str] | tuple[str, ...]) -> str | None:
    """Return a "did you mean X?" hint for an unknown name, or None when nothing is close.

    Names are compared case- and punctuation-insensitively: lower-cased, with ``_`` and
    ``-`` removed (``rouge_l`` and ``ROUGE-L`` both suggest ``rougeL``); a name equal to a
    choice in that form wins, else the closest by :func:`difflib.get_close_matches`
    (ratio >= 0.6). The suggestion is the choice as spelled in ``choices``.

    Args:
        name: the unknown name the user gave.
        choices: the valid names.

    """
    import difflib

    def key(s: str) -> str:
        return s.lower().replace("_", "").replace("-", "")

    by_key: dict[str, str] = {}
    for choice in choices:
        by_key.setdefault(key(choice), choice)
    wanted = key(name)
    if wanted in by_key:
        return f"did you mean {by_key[wanted]!r}?"
    close = difflib.get_close_matches(wanted, list(by_key), n=1, cutoff=0.6)
    return f"did you mean {by_key[close[0]]!r}?" if close else None
