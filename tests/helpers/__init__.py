"""Plain helpers of the tests, imported by name (tests/ is on pytest's
pythonpath): what several test files share. Fixtures stay in the
conftest.py files; test files import neither conftest nor each other."""
