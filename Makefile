# nkid: the NeuronCore daemon, its command line and its Python package.
#
#   make deps     install what is missing (apt-get, .venv)
#   make          build build/bin/nkid and build/bin/nkictl, the Python stubs
#   make check    build and run every test, ending with a summary line
#   make check-asan   the same suite against a build with ASan and UBSan
#   make fuzz     every fuzz target for FUZZ_SECONDS (default 300) each
#   make faults   the fault-injection suite (tests/faults/report.md)
#   make soak     a mixed load for DURATION seconds (default 600)
#   make demo     start nkid on a private socket and run kernels through it
#   make bench    the performance report (bench/report.md)
#   make install  [DESTDIR=] [PREFIX=/usr/local]

PREFIX   ?= /usr/local
DESTDIR  ?=
BUILD    := build
PY       := .venv/bin/python
VERSION  := 0.1.0

CC       ?= cc
PKGS     := grpc libuv libprotobuf-c sqlite3 libcjson libsystemd libcrypto openblas sleef \
	libmicrohttpd hiredis
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# gRPC's pkg-config names every abseil library; the core needs two.
# OpenBLAS is not linked: sim/sim_blas.c loads it on first use, after
# naming the kernels it is to pick; nor is libmicrohttpd (and GnuTLS with
# it): daemon/metrics_http.c loads it when metrics are served.
PKG_LIBS   = -lgrpc -lgpr $(shell pkg-config --libs $(filter-out grpc openblas libmicrohttpd,$(PKGS)) 2>/dev/null) -ldl
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null)

OPT      ?= -O2
CFLAGS   ?= $(OPT) -g
CFLAGS   += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -fno-strict-aliasing -pthread
CPPFLAGS += -D_GNU_SOURCE -DNKID_VERSION='"$(VERSION)"' -I$(BUILD)/gen -I. $(PKG_CFLAGS) -MMD -MP
LDLIBS   += $(PKG_LIBS) -lpthread -lm

PROTOS     := proto/nkid.proto proto/nkir.proto
GEN_C      := $(patsubst proto/%.proto,$(BUILD)/gen/%.pb-c.c,$(PROTOS))
GEN_H      := $(GEN_C:.c=.h)

SIM_SRC    := $(wildcard sim/*.c)
MODEL_SRC  := $(filter-out model/nkimodel.c,$(wildcard model/*.c))
CACHE_SRC  := $(wildcard cache/*.c)
DAEMON_SRC := $(wildcard daemon/*.c)
CTL_SRC    := $(wildcard client/nkictl/*.c)
CLIENT_SRC := $(wildcard client/libnkid/*.c)
WIRE_SRC   := $(wildcard proto/*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
PROTO_OBJ  := $(patsubst $(BUILD)/gen/%.c,$(BUILD)/obj/gen/%.o,$(GEN_C))
SIM_OBJ    := $(call obj,$(SIM_SRC))
MODEL_OBJ  := $(call obj,$(MODEL_SRC))
CACHE_OBJ  := $(call obj,$(CACHE_SRC))
DAEMON_OBJ := $(call obj,$(DAEMON_SRC))
CTL_OBJ    := $(call obj,$(CTL_SRC))
CLIENT_OBJ := $(call obj,$(CLIENT_SRC))
WIRE_OBJ   := $(call obj,$(WIRE_SRC))
DAEMON_LIB_OBJ := $(filter-out $(BUILD)/obj/daemon/nkid.o,$(DAEMON_OBJ))
CTL_LIB_OBJ    := $(filter-out $(BUILD)/obj/client/nkictl/nkictl.o,$(CTL_OBJ))

# libnkidclient: the C client library (client/libnkid: the fast path).
CLIENT_LIB := $(BUILD)/lib/libnkidclient.a
# In link order: a library before those it calls (libnkicache's CacheVerify
# reads a cpu image's signature through libnkisim).
LIBS := $(BUILD)/lib/libnkimodel.a $(BUILD)/lib/libnkicache.a $(BUILD)/lib/libnkisim.a \
	$(BUILD)/lib/libnkiproto.a

# Each unit suite links the main() they share (tests/unit/check_main.c).
UNIT_SRC   := $(filter-out tests/unit/check_main.c,$(wildcard tests/unit/check_*.c))
UNIT_MAIN  := $(BUILD)/obj/tests/unit/check_main.o
UNIT_BIN   := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
FUZZ_SRC   := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN   := $(patsubst tests/fuzz/%.c,$(BUILD)/tests/%,$(FUZZ_SRC))
# What the fuzz targets link: every library and the daemon's modules,
# built again with coverage, ASan and UBSan (an archive: each target pulls
# only what it calls).
FUZZ_LIB_SRC := $(SIM_SRC) $(MODEL_SRC) $(CACHE_SRC) $(WIRE_SRC) \
	$(filter-out daemon/nkid.c,$(DAEMON_SRC)) client/nkictl/npy.c
FUZZ_OBJ   := $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(FUZZ_LIB_SRC)) \
	$(patsubst $(BUILD)/gen/%.c,$(BUILD)/fuzz/obj/gen/%.o,$(GEN_C))

PYPKG      := client/python/nkid
PYGEN      := $(PYPKG)/_proto/nkid_pb2.py $(PYPKG)/_proto/nkir_pb2.py

.PHONY: all deps check demo bench install uninstall clean python unit fuzz \
	fuzzers check-asan faults soak
.DEFAULT_GOAL := all
.SECONDARY:

all: deps $(BUILD)/bin/nkid $(BUILD)/bin/nkictl $(BUILD)/bin/nkimodel \
	$(BUILD)/man/nkictl.1 python

deps:
	@scripts/deps.sh

# ---------------------------------------------------------------- code

$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: proto/%.proto
	@mkdir -p $(BUILD)/gen
	protoc-c -Iproto --c_out=$(BUILD)/gen $<

$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -w -c -o $@ $<

$(BUILD)/obj/%.o: %.c | $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# sim/ is the executor's hot path: let the compiler vectorize it.
$(BUILD)/obj/sim/%.o: CFLAGS += -O3 -march=x86-64-v2 -ffp-contract=off

# libnkiproto: the generated messages and proto/wire.c, the wire facts that
# nkid and nkictl share.
$(BUILD)/lib/libnkiproto.a: $(PROTO_OBJ) $(WIRE_OBJ)
$(BUILD)/lib/libnkisim.a: $(SIM_OBJ)
$(BUILD)/lib/libnkimodel.a: $(MODEL_OBJ)
$(BUILD)/lib/libnkicache.a: $(CACHE_OBJ)
$(BUILD)/lib/libnkidclient.a: $(CLIENT_OBJ)
$(BUILD)/lib/%.a:
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/bin/nkid: $(DAEMON_OBJ) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(DAEMON_OBJ) $(LIBS) $(LDLIBS)

# nkimodel: model a saved kernel on a NeuronCore without executing it.
$(BUILD)/bin/nkimodel: $(BUILD)/obj/model/nkimodel.o $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIBS) $(LDLIBS)

# nkictl's own libraries: tables (util-linux) and `nkictl top` (ncurses).
CTL_PKGS = smartcols ncursesw
# nkictl is a one-shot process: gRPC linked statically starts in about a
# fifth of the time it takes to load its ~55 shared libraries. SQLite,
# ncurses and the C++ runtime are static too (libsmartcols and libcjson
# have no static archive here), and the executable is not PIE: the loader
# then has ~400 relocations to apply instead of ~32,000 and a few hundred
# symbol lookups less (docs/performance.md, "Whole-process cache hits").
CTL_LDFLAGS = -no-pie -static-libgcc
CTL_LDLIBS = -Wl,-Bstatic $(shell pkg-config --static --libs grpc libprotobuf-c 2>/dev/null) \
	-lsqlite3 -lncursesw -ltinfo -lstdc++ \
	-Wl,-Bdynamic $(shell pkg-config --libs libcjson smartcols 2>/dev/null) \
	-lz -lpthread -lm -ldl
$(BUILD)/bin/nkictl: $(CTL_OBJ) $(CLIENT_LIB) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $(CTL_LDFLAGS) -o $@ $(CTL_OBJ) $(CLIENT_LIB) $(LIBS) $(CTL_LDLIBS) 2>&1 | \
		{ grep -v -e 'getaddrinfo' -e 'in statically linked' || true; }
	@test -x $@

# nkictl(1): the prose of docs/nkictl.1.in around the OPTIONS and COMMANDS
# sections that nkictl prints from its command table, so they cannot drift.
$(BUILD)/man/nkictl.1: docs/nkictl.1.in $(BUILD)/bin/nkictl
	@mkdir -p $(dir $@)
	$(BUILD)/bin/nkictl help --man >$@.gen
	sed -e 's/@VERSION@/$(VERSION)/' -e '/@GENERATED@/{r $@.gen' -e 'd;}' $< >$@
	@rm -f $@.gen

# ---------------------------------------------------------------- python

python: $(PYGEN) .venv/.editable-stamp

$(PYPKG)/_proto/%_pb2.py: proto/%.proto | deps
	@mkdir -p $(PYPKG)/_proto
	$(PY) -m grpc_tools.protoc -Iproto --python_out=$(PYPKG)/_proto \
		--grpc_python_out=$(PYPKG)/_proto $<
	sed -i -E 's/^import ([a-z_]+_pb2) as/from . import \1 as/' $(PYPKG)/_proto/$*_pb2*.py

.venv/.editable-stamp: client/python/pyproject.toml | deps
	$(PY) -m pip install -q --no-deps --no-build-isolation -e client/python
	cp client/python/nkid-nki.pth "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/"
	@touch $@

# ---------------------------------------------------------------- tests

# check_sim* test the executor alone; check_ctl_* nkictl's modules; the
# others the daemon's.
# The kernel builder the check_sim* suites share (tests/unit/sim_kb.h).
SIM_KB := $(BUILD)/obj/tests/unit/sim_kb.o
SIM_CHECKS := $(filter $(BUILD)/tests/check_sim%,$(UNIT_BIN))
$(SIM_CHECKS): $(BUILD)/tests/%: tests/unit/%.c $(UNIT_MAIN) $(SIM_KB) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(UNIT_MAIN) $(SIM_KB) $(LIBS) $(LDLIBS) \
		$(CHECK_LIBS)

$(BUILD)/tests/check_ctl_%: tests/unit/check_ctl_%.c $(UNIT_MAIN) $(CTL_LIB_OBJ) $(CLIENT_LIB) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(UNIT_MAIN) $(CTL_LIB_OBJ) $(CLIENT_LIB) $(LIBS) $(LDLIBS) \
		$(shell pkg-config --libs $(CTL_PKGS) 2>/dev/null) $(CHECK_LIBS)

$(BUILD)/tests/check_%: tests/unit/check_%.c $(UNIT_MAIN) $(DAEMON_LIB_OBJ) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(UNIT_MAIN) $(DAEMON_LIB_OBJ) $(LIBS) $(LDLIBS) $(CHECK_LIBS)

# Fuzz targets: libFuzzer (clang from Debian) under AddressSanitizer and
# UBSan; tests/fuzz/run.sh runs one on its corpus for a while.
FUZZ_CC     ?= clang
FUZZ_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=undefined -std=gnu11 -pthread -fno-strict-aliasing
$(BUILD)/fuzz/obj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -w -c -o $@ $<
$(BUILD)/fuzz/obj/%.o: %.c | $(GEN_H)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -w -c -o $@ $<
$(BUILD)/fuzz/libnkifuzz.a: $(FUZZ_OBJ)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/tests/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_tmp.h \
		tests/fuzz/fuzz_sim.h $(BUILD)/fuzz/libnkifuzz.a
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -Wall -Wextra -Wno-unused-parameter \
		-fsanitize=fuzzer -o $@ $< $(BUILD)/fuzz/libnkifuzz.a $(LDLIBS)

# The libnrt test double (tests/neuron/fake_nrt.c), never installed.
$(BUILD)/tests/libfake_nrt.so: tests/neuron/fake_nrt.c daemon/neuron_nrt.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -shared -fPIC -o $@ $<

unit: $(UNIT_BIN) $(BUILD)/tests/libfake_nrt.so
fuzzers: $(FUZZ_BIN)

check: all unit fuzzers
	@BUILD=$(BUILD) scripts/check.sh

# Fuzzing for longer: each target FUZZ_SECONDS on its corpus; new inputs
# go to $(BUILD)/fuzz/corpus/NAME (tests/fuzz/run.sh).
FUZZ_SECONDS ?= 300
fuzz: fuzzers
	@for t in $(FUZZ_BIN); do \
		tests/fuzz/run.sh $$t $(FUZZ_SECONDS) $(BUILD)/fuzz/corpus || exit 1; \
	done

# The whole check suite against everything built with ASan and UBSan in
# build-asan/ (nkid, nkictl, the unit tests; valgrind tests are skipped
# there: two checkers of memory do not stack).
ASAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=undefined
check-asan: deps python
	$(MAKE) BUILD=build-asan OPT="$(ASAN_FLAGS)" LDFLAGS="-fsanitize=address,undefined" \
		NKID_ASAN=1 check

# The fault-injection suite and the soak (docs/reliability.md).
faults: all $(BUILD)/tests/libiofail.so $(BUILD)/tests/libfake_nrt.so
	$(PY) tests/faults/run.py --build $(BUILD)
DURATION ?= 600
soak: all
	$(PY) tests/faults/soak.py --build $(BUILD) --duration $(DURATION)

# The I/O fault shim of make faults (LD_PRELOAD; tests/faults/iofail.c).
$(BUILD)/tests/libiofail.so: tests/faults/iofail.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -shared -fPIC -o $@ $< -ldl

demo: all
	@scripts/demo.sh

BENCH_BIN := $(BUILD)/bench/echo_server $(BUILD)/bench/echo_client \
	$(BUILD)/bench/fast_client $(BUILD)/bench/ipc_floor \
	$(BUILD)/bench/cache_fill $(BUILD)/bench/cache_lookup
$(BUILD)/bench/%: bench/%.c $(CLIENT_LIB) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(CLIENT_LIB) $(LIBS) $(LDLIBS)

bench: all $(BENCH_BIN)
	$(PY) scripts/bench.py

# ---------------------------------------------------------------- install

SBINDIR     ?= $(PREFIX)/sbin
BINDIR      ?= $(PREFIX)/bin
DOCDIR      ?= $(PREFIX)/share/doc/nkid
MANDIR      ?= $(PREFIX)/share/man
SYSCONFDIR  ?= /etc
UNITDIR     ?= /lib/systemd/system
SYSUSERSDIR ?= /usr/lib/sysusers.d
TMPFILESDIR ?= /usr/lib/tmpfiles.d
# Debian's bash-completion loads completions from here on first use.
BASHCOMPDIR ?= $(shell pkg-config --variable=completionsdir bash-completion 2>/dev/null || \
	echo /usr/share/bash-completion/completions)

$(BUILD)/systemd/nkid.service: systemd/nkid.service.in
	@mkdir -p $(dir $@)
	sed 's|@SBINDIR@|$(SBINDIR)|g' $< >$@

# The Python package goes to $(PYLIBDIR) when set (a site-packages
# directory), else it is left to pip: pip install client/python.
install: all $(BUILD)/systemd/nkid.service
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(SYSCONFDIR)/nkid \
		$(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(TMPFILESDIR) \
		$(DESTDIR)$(DOCDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(BASHCOMPDIR)
	install -m 0755 $(BUILD)/bin/nkid $(DESTDIR)$(SBINDIR)/nkid
	install -m 0755 $(BUILD)/bin/nkictl $(DESTDIR)$(BINDIR)/nkictl
	install -m 0755 $(BUILD)/bin/nkimodel $(DESTDIR)$(BINDIR)/nkimodel
	[ -e $(DESTDIR)$(SYSCONFDIR)/nkid/nkid.json ] || \
		install -m 0644 config/nkid.json $(DESTDIR)$(SYSCONFDIR)/nkid/nkid.json
	install -m 0644 $(BUILD)/systemd/nkid.service systemd/nkid.socket \
		systemd/nkid-metrics.socket $(DESTDIR)$(UNITDIR)/
	install -m 0644 systemd/nkid.sysusers $(DESTDIR)$(SYSUSERSDIR)/nkid.conf
	install -m 0644 systemd/nkid.tmpfiles $(DESTDIR)$(TMPFILESDIR)/nkid.conf
	install -m 0644 docs/nkid.8 $(DESTDIR)$(MANDIR)/man8/nkid.8
	install -m 0644 $(BUILD)/man/nkictl.1 $(DESTDIR)$(MANDIR)/man1/nkictl.1
	install -m 0644 client/nkictl/nkictl.bash $(DESTDIR)$(BASHCOMPDIR)/nkictl
	install -m 0644 README.md docs/*.md $(DESTDIR)$(DOCDIR)/
	install -m 0644 systemd/nkid-remote.conf $(DESTDIR)$(DOCDIR)/
	if [ -n "$(PYLIBDIR)" ]; then \
		install -d $(DESTDIR)$(PYLIBDIR) && \
		cp -r client/python/nkid $(DESTDIR)$(PYLIBDIR)/ && \
		install -m 0644 client/python/nkid-nki.pth $(DESTDIR)$(PYLIBDIR)/ && \
		find $(DESTDIR)$(PYLIBDIR)/nkid -name __pycache__ -prune -exec rm -rf {} +; \
	fi

# The config file stays: it is the operator's.
uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/nkid $(DESTDIR)$(BINDIR)/nkictl \
		$(DESTDIR)$(BINDIR)/nkimodel
	rm -f $(DESTDIR)$(UNITDIR)/nkid.service $(DESTDIR)$(UNITDIR)/nkid.socket \
		$(DESTDIR)$(UNITDIR)/nkid-metrics.socket
	rm -f $(DESTDIR)$(SYSUSERSDIR)/nkid.conf $(DESTDIR)$(TMPFILESDIR)/nkid.conf
	rm -f $(DESTDIR)$(MANDIR)/man8/nkid.8 $(DESTDIR)$(MANDIR)/man1/nkictl.1
	rm -f $(DESTDIR)$(BASHCOMPDIR)/nkictl
	rm -rf $(DESTDIR)$(DOCDIR)
	if [ -n "$(PYLIBDIR)" ]; then rm -rf $(DESTDIR)$(PYLIBDIR)/nkid \
		$(DESTDIR)$(PYLIBDIR)/nkid-nki.pth; fi

clean:
	rm -rf $(BUILD) $(PYPKG)/_proto/*_pb2*.py .venv/.editable-stamp

-include $(shell find $(BUILD)/obj $(BUILD)/fuzz $(BUILD)/tests -name '*.d' 2>/dev/null)
