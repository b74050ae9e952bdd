# fio-pack goes to DATADIR/scripts beside the jobs/ and reference/ it reads
# (the package finds them as it does in a checkout); BINDIR/fio-pack is a
# symbolic link to its launcher, which Python follows to find the package.
# The launcher runs with $(PYTHON), the Python the Makefile and the tests
# use (the one Debian's matplotlib is installed for). installed.json tells
# the package where the engines are (fiopack/engines.py), and pmrc2fio in
# BINDIR writes job files naming them: an installed pack needs no checkout.
install: engines $(OBJ)/lib/postmark.o $(OBJ)/lib/pmconfig.o $(OBJ)/lib/errmsg.o $(OBJ)/lib/outfile.o \
		$(OBJ)/lib/target.o
	install -d $(DESTDIR)$(LIBDIR)/$(FIO_VERSION) $(DESTDIR)$(DATADIR)/jobs $(DESTDIR)$(BINDIR)
	install -m 0755 $(ENGINES:%=$(BUILD)/%.so) $(DESTDIR)$(LIBDIR)/
	install -m 0755 $(ENGINES:%=$(VDIR)/%.so) $(DESTDIR)$(LIBDIR)/$(FIO_VERSION)/
	$(CC) $(BASE_CFLAGS) -Iengines/lib '-DPMRC2FIO_ENGINE="external:$(LIBDIR)/postmark.so"' \
		-o $(BUILD)/pmrc2fio-installed tools/pmrc2fio.c $(OBJ)/lib/postmark.o $(OBJ)/lib/pmconfig.o \
		$(OBJ)/lib/errmsg.o $(OBJ)/lib/outfile.o $(OBJ)/lib/target.o $(LINK_LIBS)
	install -m 0755 $(BUILD)/pmrc2fio-installed $(DESTDIR)$(BINDIR)/pmrc2fio
	cd jobs && find . -type d -exec install -d $(DESTDIR)$(DATADIR)/jobs/{} \;
	for f in $$(find jobs -type f); do \
		case $$f in \
		*.fio) sed -e 's|external:$${FIO_PACK_ENGINES}/|external:$(LIBDIR)/|' \
			   -e 's|read_iolog=jobs/|read_iolog=$(DATADIR)/jobs/|' \
			   -e 's|dbr_trace=jobs/|dbr_trace=$(DATADIR)/jobs/|' $$f > $(DESTDIR)$(DATADIR)/$$f ;; \
		*) install -m 0644 $$f $(DESTDIR)$(DATADIR)/$$f ;; \
		esac; \
	done
	for d in $$(find scripts/fiopack reference -type d -not -name __pycache__); do \
		install -d $(DESTDIR)$(DATADIR)/$$d; done
	for f in $$(find scripts/fiopack -name '*.py') $$(find reference -type f); do \
		install -m 0644 $$f $(DESTDIR)$(DATADIR)/$$f; done
	sed -e '1s|.*|#!$(PYTHON)|' scripts/fio-pack > $(DESTDIR)$(DATADIR)/scripts/fio-pack
	chmod 0755 $(DESTDIR)$(DATADIR)/scripts/fio-pack
	$(PYTHON) -c 'import json, sys; print(json.dumps({"engines": sys.argv[1]}))' \
		'$(LIBDIR)' > $(DESTDIR)$(DATADIR)/scripts/fiopack/installed.json
	ln -sf $(DATADIR)/scripts/fio-pack $(DESTDIR)$(BINDIR)/fio-pack
