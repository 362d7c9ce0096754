"""Every public function and Tensor method documents itself with a `>>> ` example that runs."""
import doctest

import numpy
import pytest

import lazytensor as lt


def _public_functions():
    names = []
    for name in lt.__all__:
        value = getattr(lt, name)
        if callable(value) and not isinstance(value, type):
            names.append((f"lt.{name}", value))
    return names


def _public_methods():
    return [(f"Tensor.{name}", getattr(lt.Tensor, name)) for name in dir(lt.Tensor)
            if not name.startswith("_") and callable(getattr(lt.Tensor, name))]


def _nn_and_optim():
    """lt.nn.functional's functions, lt.nn's and lt.optim's classes (examples in their class docstrings)."""
    names = [(f"F.{name}", getattr(lt.nn.functional, name)) for name in lt.nn.functional.__all__]
    names += [(f"lt.nn.{name}", getattr(lt.nn, name)) for name in lt.nn.__all__ if name != "functional"]
    names += [(f"lt.optim.{name}", getattr(lt.optim, name)) for name in lt.optim.__all__ if name != "Optimizer"]
    return names


def _extensions():
    """The Array API extensions' functions: lt.linalg's and lt.fft's."""
    return [(f"lt.{module.__name__.split('.')[-1]}.{name}", getattr(module, name))
            for module in (lt.linalg, lt.fft) for name in module.__all__
            if not isinstance(getattr(module, name), type)]   # (the result NamedTuples document no code)


DOCUMENTED = _public_functions() + _public_methods() + _nn_and_optim() + _extensions()


def _has_example(doc):
    return any(line.lstrip().startswith(">>> ") for line in (doc or "").splitlines())


def test_every_public_name_has_an_example():
    missing = [name for name, value in DOCUMENTED if ">>>" not in (value.__doc__ or "")]
    assert not missing, f"docstrings without a '>>>' example: {missing}"
    inline = [name for name, value in DOCUMENTED if not _has_example(value.__doc__)]
    assert not inline, f"'>>>' must start a line to run as a doctest: {inline}"


class _Checker(doctest.OutputChecker):
    """An example with no expected-output line only has to run without error."""

    def check_output(self, want, got, optionflags):
        if not want.strip():
            return True
        return super().check_output(want, got, optionflags)


@pytest.mark.parametrize("name, value", DOCUMENTED, ids=[name for name, _ in DOCUMENTED])
def test_examples_run(name, value):
    parser = doctest.DocTestParser()
    test = parser.get_doctest(value.__doc__ or "", {"lt": lt, "np": numpy, "F": lt.nn.functional}, name, None, 0)
    assert test.examples, f"{name}: no runnable example"
    runner = doctest.DocTestRunner(checker=_Checker(),
                                   optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    report = []
    with numpy.errstate(invalid="ignore"):  # lt.acosh's example compares with numpy's nan
        runner.run(test, out=report.append)
    results = runner.summarize(verbose=False)
    assert results.failed == 0, "".join(report)
