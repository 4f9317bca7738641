"""Programs of the project loaded as modules.  Programs are named without an
extension (bench/reads, test/scripts/xor-check), so `import` cannot find
them; load() runs one's top level under a module name, its `__main__` part
excepted."""
import importlib.machinery
import importlib.util
import os

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load(path, name):
    """The program at path (relative to the top directory) as module name."""
    loader = importlib.machinery.SourceFileLoader(name, os.path.join(TOP, path))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    loader.exec_module(module)
    return module
