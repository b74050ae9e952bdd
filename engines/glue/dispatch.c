/*
 * The engine a job file names (ioengine=external:build/smallfile.so): it
 * holds no engine, only the choice of the build for the fio it is loaded
 * into. Each fio release needs engines compiled against its own source
 * (struct layouts and the ioops version change), so `make` puts them in a
 * directory named after the fio version (build/fio-3.33/smallfile.so), and
 * builds for several fio versions live side by side: a lab's hosts, or a
 * host with its distribution's fio and one built from source, run the same
 * job files. Client/server runs too: each server picks its own build.
 *
 * Compiled without fio's headers: it uses only two symbols every fio from
 * 3.28 on exports (fio is linked -rdynamic), the version string and
 * log_err(), whose signature has not changed.
 *
 * PACK_ENGINE_NAME: the engine's name, which is also its file's.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#ifndef PACK_ENGINE_NAME
#error "PACK_ENGINE_NAME must name the engine"
#endif

extern const char fio_version_string[];
extern ssize_t log_err(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* fio's get_ioengine_t; the ops are the versioned engine's business */
typedef void (*get_ioengine_fn)(void **ops);

void get_ioengine(void **ops) __attribute__((visibility("default")));
void get_ioengine(void **ops)
{
	char self[PATH_MAX], path[PATH_MAX + 64];
	get_ioengine_fn real;
	Dl_info info;
	char *slash;
	void *h;

	*ops = NULL;
	/* the directory this file was loaded from, as fio named it */
	if (!dladdr((void *)get_ioengine, &info) || !info.dli_fname ||
	    !realpath(info.dli_fname, self)) {
		log_err("%s: cannot tell where this engine was loaded from\n", PACK_ENGINE_NAME);
		return;
	}
	slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	snprintf(path, sizeof(path), "%s/%s/%s.so", self, fio_version_string, PACK_ENGINE_NAME);
	/*
	 * RTLD_LOCAL: the engines' own symbols stay theirs (only get_ioengine
	 * is exported). The handle is kept: fio closes ours, not this one.
	 */
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		log_err("%s: no build for %s, the fio running: %s; build it with: make FIO=$(command -v fio) (or FIO_SRC=its source)\n",
			PACK_ENGINE_NAME, fio_version_string, dlerror());
		return;
	}
	real = (get_ioengine_fn)dlsym(h, "get_ioengine");
	if (!real) {
		log_err("%s: %s has no get_ioengine: not one of the pack's engines\n",
			PACK_ENGINE_NAME, path);
		return;
	}
	real(ops);
}
