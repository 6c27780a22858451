"""What the tests share: helpers, scripted servers, process control and the scripts tests run by module
name (`python -m tests.support.NAME`). No test module lives here."""
