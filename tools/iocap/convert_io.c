/*
 * iocap-convert: iocap's output (tools/iocap/iocap.c: the text `strace -f
 * -ttt -yy -T` would write) into a dbtrace trace's records, at the rate a
 * production capture makes them; `fio-pack capture` (capture/native.py)
 * runs it and writes the header, whose roles need its rules.
 *
 *   iocap-convert --root DIR [--root DIR]... --outside drop|keep|error
 *                 --outside-prefix P [--listing FILE] [--odirect FILE]
 *                 --pagesize N --body OUT --state OUT INPUT
 *
 * --listing: "TYPE SIZE ABSPATH\0" entries; --odirect: "TID FD,FD...\0".
 * OUT of --body: the record lines; of --state: the files, streams and
 * notes, one JSON object. Exit 0 when converted; 2 when INPUT has a line
 * this converter does not hold as the Python one would (an strace line,
 * something that converter refuses): the caller converts it with that one;
 * 1 on an error of its own (one line).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convert.h"

static struct conv *the_conv;

_Noreturn void conv_fallback(struct conv *c, const char *why, ...)
{
	va_list ap;

	c = c ? c : the_conv;
	fprintf(stderr, "iocap-convert: line %lld: ", c ? c->line : 0);
	va_start(ap, why);
	vfprintf(stderr, why, ap);
	va_end(ap);
	fprintf(stderr, "; the Python converter takes it\n");
	exit(2);
}

static _Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static _Noreturn void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "iocap-convert: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* strace.py unescape: \xHH, \NNN, \n and the like, anything else itself */
char *unescape(const char *s, size_t n)
{
	char *out = xmalloc(n + 1);
	size_t i = 0, o = 0;

	while (i < n) {
		unsigned char ch = s[i];

		if (ch != '\\' || i + 1 >= n) {
			out[o++] = ch;
			i++;
			continue;
		}
		ch = s[++i];
		if (ch == 'x' && i + 2 < n && isxdigit((unsigned char)s[i + 1]) &&
		    isxdigit((unsigned char)s[i + 2])) {
			char hex[3] = { s[i + 1], s[i + 2], 0 };

			out[o++] = (char)strtol(hex, NULL, 16);
			i += 3;
		} else if (ch >= '0' && ch <= '7') {
			int v = 0, k = 0;

			while (k < 3 && i < n && s[i] >= '0' && s[i] <= '7') {
				v = v * 8 + (s[i] - '0');
				i++;
				k++;
			}
			out[o++] = (char)(v & 0xff);
		} else {
			static const char from[] = "ntrvfabe", to[] = "\n\t\r\v\f\a\b\x1b";
			const char *p = strchr(from, ch);

			out[o++] = p && ch ? to[p - from] : (char)ch;
			i++;
		}
	}
	out[o] = '\0';
	return out;
}

int parse_int(const char *s, long long *v)
{
	char *end;

	if (!*s || isspace((unsigned char)*s) || *s == '+')
		return 0;
	errno = 0;
	if (!strncmp(s, "0x", 2) || !strncmp(s, "-0x", 3))
		*v = strtoll(s, &end, 16);
	else
		*v = strtoll(s, &end, 10);
	return !errno && !*end && isxdigit((unsigned char)end[-1]);
}

/* strace.py parse_fd: 1 if @s is a descriptor (@f->path to free), else 0 */
int parse_fd(const char *s, struct fdarg *f)
{
	const char *p = s, *r;
	size_t n;

	memset(f, 0, sizeof(*f));
	if (!strncmp(s, "AT_FDCWD", 8)) {
		f->num = -100;
		p = s + 8;
	} else {
		char *end;

		if (*p == '-')
			p++;
		if (!isdigit((unsigned char)*p))
			return 0;
		errno = 0;
		f->num = strtoll(s, &end, 10);
		if (errno)
			conv_fallback(NULL, "a descriptor beyond 64 bits");
		p = end;
	}
	r = p;
	n = strlen(r);
	if (!n)
		return 1;
	if (!strcmp(r, "(deleted)"))
		return 1;
	if (r[0] != '<')
		return 0;
	if (r[n - 1] == '>') {
		/* the whole annotation */
	} else if (n >= 10 && !strcmp(r + n - 9, "(deleted)") && r[n - 10] == '>') {
		n -= 9;
		f->deleted = 1;
	} else {
		return 0;
	}
	const char *inner = r + 1;
	size_t in = n - 2, k;

	if (!in || inner[0] != '/') {
		f->kind = 2;
		f->path = xmalloc(in + 1);
		memcpy(f->path, inner, in);
		f->path[in] = '\0';
		return 1;
	}
	for (k = 0; k < in; k++)
		if (inner[k] == '<' && (k == 0 || inner[k - 1] != '\\'))
			break;
	f->kind = 1;
	f->path = unescape(inner, k);
	n = strlen(f->path);
	if (n >= 10 && !strcmp(f->path + n - 10, " (deleted)")) {
		f->path[n - 10] = '\0';
		f->deleted = 1;
	}
	return 1;
}

/* strace.py _skip_annotation: @s[@i] is '<'; the index after its '>' */
static size_t skip_annotation(const char *s, size_t i)
{
	int depth = 0;

	while (s[i]) {
		char ch = s[i];

		if (ch == '\\') {
			if (!s[i + 1])
				break;
			i += 2;
			continue;
		}
		if (ch == '<') {
			depth++;
		} else if (ch == '>' && s[i - 1] != '-') {
			if (--depth == 0)
				return i + 1;
		}
		i++;
	}
	conv_fallback(NULL, "an unterminated <...> annotation");
}

static int py_space(unsigned char ch)
{
	if (ch == 0x1c || ch == 0x1d || ch == 0x1e || ch == 0x1f || ch == 0x85 || ch == 0xa0)
		conv_fallback(NULL, "a separator Python strips and C does not");
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f';
}

/* the argument from @a to @b, stripped, as a string in @buf (NUL written in place) */
static char *strip(char *a, char *b)
{
	while (a < b && py_space(*a))
		a++;
	while (b > a && py_space(b[-1]))
		b--;
	*b = '\0';
	return a;
}

#define MAX_ARGS 16

/* strace.py split_args over @s from @i (after '('): the arguments; the index after ')' */
static size_t split_args(char *s, size_t i, char **args, int *nargs)
{
	size_t start = i;
	int depth = 0;

	*nargs = 0;
	for (;;) {
		size_t j = i;

		while (s[j] && !strchr("\"(){}[]<,", s[j]))
			j++;
		if (!s[j])
			conv_fallback(NULL, "the argument list does not end");
		char ch = s[j];

		if (ch == '"') {
			j++;
			while (s[j] && s[j] != '"') {
				if (s[j] == '\\') {
					if (!s[j + 1])
						conv_fallback(NULL, "an unterminated string");
					j++;
				}
				j++;
			}
			if (!s[j])
				conv_fallback(NULL, "an unterminated string");
			j++;
			if (!strncmp(s + j, "...", 3))
				j += 3;
			i = j;
		} else if (ch == '(' || ch == '{' || ch == '[') {
			depth++;
			i = j + 1;
		} else if (ch == ')' || ch == '}' || ch == ']') {
			if (!depth) {
				if (ch != ')')
					conv_fallback(NULL, "unbalanced '%c'", ch);
				char *tail = strip(s + start, s + j);

				if (*tail || *nargs) {
					if (*nargs >= MAX_ARGS)
						conv_fallback(NULL, "too many arguments");
					args[(*nargs)++] = tail;
				}
				return j + 1;
			}
			depth--;
			i = j + 1;
		} else if (ch == '<') {
			unsigned char pc = j ? (unsigned char)s[j - 1] : 0;

			if (pc >= 0x80)
				conv_fallback(NULL, "a non-ASCII character before '<'");
			i = j && (isalnum(pc) || pc == '_') ? skip_annotation(s, j) : j + 1;
		} else { /* ',' */
			if (!depth) {
				if (*nargs >= MAX_ARGS)
					conv_fallback(NULL, "too many arguments");
				args[(*nargs)++] = strip(s + start, s + j);
				start = j + 1;
			}
			i = j + 1;
		}
	}
}

static int digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return 0;
	return n > 0;
}

/* one line of iocap's output */
static void feed(struct conv *c, char *line)
{
	size_t n = strlen(line), i, j;
	long long pid;
	int64_t t;
	char *args[MAX_ARGS], *name, *rest, *e;
	int nargs;

	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	for (i = 0; i < n && py_space(line[i]); i++)
		;
	if (i == n)
		return;
	/* "TID SEC.USEC NAME(" exactly as iocap writes it */
	for (i = 0; isdigit((unsigned char)line[i]); i++)
		;
	if (!i || i > 10 || line[i] != ' ')
		conv_fallback(c, "not a line of iocap's");
	pid = strtoll(line, NULL, 10);
	j = ++i;
	while (isdigit((unsigned char)line[i]))
		i++;
	if (i == j || i - j > 12 || line[i] != '.' || !digits(line + i + 1, 6) ||
	    line[i + 7] != ' ')
		conv_fallback(c, "not a line of iocap's");
	t = strtoll(line + j, NULL, 10) * 1000000 + strtoll(line + i + 1, NULL, 10);
	i += 8;
	if (!c->have_first) {
		c->first_pid = pid;
		c->have_first = 1;
	}
	name = line + i;
	if (!(isalpha((unsigned char)*name) || *name == '_'))
		conv_fallback(c, "not a line of iocap's");
	for (j = i; isalnum((unsigned char)line[j]) || line[j] == '_'; j++)
		;
	if (line[j] != '(')
		conv_fallback(c, "not a line of iocap's");
	line[j] = '\0';
	i = split_args(line, j + 1, args, &nargs);
	rest = line + i;
	if (n >= 14 && !strcmp(line + n - 14, "<detached ...>"))
		conv_fallback(c, "a detached call");
	/* " = VALUE[<annotation>[(deleted)]][ ERRNO (text)] <S.US>" */
	if (strncmp(rest, " = ", 3))
		conv_fallback(c, "not a result as iocap writes it");
	rest += 3;
	errno = 0;
	long long value = strtoll(rest, &e, 10);
	struct fdarg resfd, *rf = NULL;
	char errname[64];
	const char *err = NULL;

	if (e == rest || (*rest != '-' && !isdigit((unsigned char)*rest)) || errno ||
	    (*rest == '0' && rest[1] == 'x'))
		conv_fallback(c, "a result not as iocap writes it");
	if (*e == '<') {
		size_t k = skip_annotation(e, 0);
		char save, *tx;

		if (!strncmp(e + k, "(deleted)", 9))
			k += 9;
		save = e[k];
		e[k] = '\0';
		tx = xmalloc(k + 32);
		sprintf(tx, "%lld%s", value, e);
		e[k] = save;
		if (!parse_fd(tx, &resfd))
			conv_fallback(c, "a result's descriptor not as iocap writes it");
		free(tx);
		rf = &resfd;
		e += k;
	}
	if (value == -1) {
		size_t k = 0;

		err = "?";
		if (*e == ' ') {
			const char *w = e;

			while (*w == ' ')
				w++;
			while (isupper((unsigned char)w[k]) || isdigit((unsigned char)w[k]) ||
			       w[k] == '_')
				k++;
			if (k >= 2 && isupper((unsigned char)w[0]) && k < sizeof(errname) &&
			    !(isalnum((unsigned char)w[k]) || w[k] == '_' ||
			      (unsigned char)w[k] >= 0x80)) {
				memcpy(errname, w, k);
				errname[k] = '\0';
				err = errname;
			}
		}
	} else if (value < 0) {
		conv_fallback(c, "a negative result not as iocap writes it");
	}
	/* the duration: "<S.US>" at the end */
	char *lt = strrchr(rest, '<'), *dot;

	if (!lt || n < 3 || line[n - 1] != '>' || !(dot = strchr(lt, '.')) ||
	    !digits(lt + 1, (size_t)(dot - lt - 1)) ||
	    !digits(dot + 1, (size_t)(line + n - 1 - dot - 1)) || line + n - 1 - dot - 1 > 9 ||
	    dot - lt - 1 > 12)
		conv_fallback(c, "a line without iocap's duration");
	{
		char frac[10] = "000000000";

		memcpy(frac, dot + 1, (size_t)(line + n - 1 - dot - 1));
		frac[6] = '\0';
		c->lat = strtoll(lt + 1, NULL, 10) * 1000000 + strtoll(frac, NULL, 10);
	}
	conv_call(c, pid, t, name, args, nargs, value, rf, err);
	if (rf)
		free(rf->path);
}

/* -- output -- */

static char obuf[1 << 16];
static size_t olen;
static FILE *ofile;

static void oflush(void)
{
	if (olen && fwrite(obuf, 1, olen, ofile) != olen)
		die("cannot write the records: %s", strerror(errno));
	olen = 0;
}

static void oput(const char *s, size_t n)
{
	if (olen + n > sizeof(obuf))
		oflush();
	memcpy(obuf + olen, s, n);
	olen += n;
}

static void onum(long long v)
{
	char b[24];
	int k = sizeof(b);
	unsigned long long u = v < 0 ? -(unsigned long long)v : (unsigned long long)v;

	do {
		b[--k] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		b[--k] = '-';
	oput(b + k, sizeof(b) - k);
}

static void write_body(struct conv *c, const char *path, long long pagesize, long long *written,
		       long long *ops)
{
	struct rec r;

	ofile = fopen(path, "w");
	if (!ofile)
		die("cannot write %s: %s", path, strerror(errno));
	rewind(c->spool);
	while (fread(&r, sizeof(r), 1, c->spool) == 1) {
		int op = r.op;

		if (c->files[r.fid]->is_dir) {
			if (op == OP_FDATASYNC)
				op = OP_FSYNC;
			else if (op != OP_FSYNC && op != OP_CREATE && op != OP_UNLINK)
				continue;
		}
		onum(r.t - c->t0);
		oput(" ", 1);
		onum(r.sid);
		oput(" ", 1);
		onum(r.fid);
		oput(" ", 1);
		oput(op_name[op], strlen(op_name[op]));
		if (op == OP_READ || op == OP_WRITE || op == OP_SFR || op == OP_TRIM) {
			if (r.a % pagesize == 0) {
				oput(" p", 2);
				onum(r.a / pagesize);
			} else {
				oput(" ", 1);
				onum(r.a);
			}
			oput(" ", 1);
			onum(r.b);
		} else if (op == OP_TRUNCATE) {
			oput(" ", 1);
			onum(r.a);
		}
		if (r.lat >= 0) {
			oput(" +", 2);
			onum(r.lat);
		}
		oput("\n", 1);
		ops[op]++;
		(*written)++;
	}
	if (ferror(c->spool))
		die("cannot read the spool: %s", strerror(errno));
	oflush();
	if (fclose(ofile))
		die("cannot write %s: %s", path, strerror(errno));
}

/* a JSON string of latin-1 bytes: Python reads back the same characters */
static void jstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = *s;

		if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\')
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void jcounts(FILE *f, const char *name, const struct smap *m)
{
	size_t i = 0;
	struct sent *e;
	int first = 1;

	fprintf(f, ", ");
	jstr(f, name);
	fprintf(f, ": {");
	while ((e = smap_next(m, &i))) {
		fprintf(f, "%s", first ? "" : ", ");
		jstr(f, e->k);
		fprintf(f, ": %lld", e->n);
		first = 0;
	}
	fprintf(f, "}");
}

static void write_state(struct conv *c, const char *path, long long written, const long long *ops)
{
	FILE *f = fopen(path, "w");
	int i;

	if (!f)
		die("cannot write %s: %s", path, strerror(errno));
	fprintf(f,
		"{\"nrec\": %lld, \"written\": %lld, \"nlat\": %lld, \"t0\": %lld, \"tmax\": %lld",
		c->nrec, written, c->nlat, (long long)c->t0, (long long)c->tmax);
	if (c->have_first)
		fprintf(f, ", \"first_pid\": %lld", c->first_pid);
	fprintf(f, ", \"ops\": {");
	for (i = 0; i < OP_NR; i++)
		fprintf(f, "%s\"%s\": %lld", i ? ", " : "", op_name[i], ops[i]);
	fprintf(f, "}, \"streams\": [");
	for (i = 0; i < c->nstreams; i++)
		fprintf(f, "%s%lld", i ? ", " : "", c->stream_pid[i]);
	fprintf(f, "], \"files\": [");
	for (i = 0; i < c->nfiles; i++) {
		struct tfile *tf = c->files[i];

		fprintf(f, "%s{\"path\": ", i ? ", " : "");
		jstr(f, tf->path);
		fprintf(f,
			", \"is_dir\": %d, \"temp\": %d, \"existed\": %d, \"size0\": %lld, "
			"\"extent\": %lld, \"direct\": %lld, \"buffered\": %lld}",
			tf->is_dir, tf->temp, tf->existed, tf->size0, tf->extent, tf->direct,
			tf->buffered);
	}
	fprintf(f, "]");
	jcounts(f, "dropped", &c->dropped);
	jcounts(f, "unseen", &c->unseen);
	jcounts(f, "ignored", &c->ignored);
	jcounts(f, "mapped", &c->mapped);
	fprintf(f, "}\n");
	if (ferror(f) | fclose(f))
		die("cannot write %s", path);
}

/* "A B C\0" entries of a file written by capture/native.py */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0, n = 0, k;

	if (!f)
		die("cannot read %s: %s", path, strerror(errno));
	do {
		if (n + 65536 > cap) {
			cap = cap * 2 + 65536;
			buf = realloc(buf, cap + 1);
			if (!buf)
				die("out of memory");
		}
		k = fread(buf + n, 1, cap - n, f);
		n += k;
	} while (k);
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
}

static void read_listing(struct conv *c, const char *path)
{
	size_t len, i = 0;
	char *buf = slurp(path, &len);

	c->has_listing = 1;
	while (i < len) {
		char *ent = buf + i, *sz, *p;
		struct sent *e;

		i += strlen(ent) + 1;
		sz = strchr(ent, ' ');
		p = sz ? strchr(sz + 1, ' ') : NULL;
		if (!p || (ent[0] != 'd' && ent[0] != 'f'))
			die("%s: not a listing", path);
		e = smap_put(&c->listing, p + 1);
		e->v = (void *)(intptr_t)ent[0];
		e->n = strtoll(sz + 1, NULL, 10);
	}
	free(buf);
}

static void read_odirect(struct conv *c, const char *path)
{
	size_t len, i = 0;
	char *buf = slurp(path, &len);

	while (i < len) {
		char *ent = buf + i, *sp = strchr(ent, ' ');

		i += strlen(ent) + 1;
		if (!sp)
			die("%s: not an O_DIRECT list", path);
		imap_set(&c->odirect, strtoll(ent, NULL, 10), xstrdup(sp + 1));
	}
	free(buf);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "root", required_argument, NULL, 'r' },
		{ "outside", required_argument, NULL, 'o' },
		{ "outside-prefix", required_argument, NULL, 'x' },
		{ "listing", required_argument, NULL, 'l' },
		{ "odirect", required_argument, NULL, 'd' },
		{ "pagesize", required_argument, NULL, 'p' },
		{ "body", required_argument, NULL, 'b' },
		{ "state", required_argument, NULL, 's' },
		{ 0 },
	};
	static struct conv c;
	const char *body = NULL, *state = NULL;
	long long pagesize = 0, written = 0, ops[OP_NR] = { 0 };
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	FILE *in;
	int o;

	the_conv = &c;
	c.outside_prefix = "";
	c.lat = -1;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'r':
			c.roots = realloc(c.roots, (c.nroots + 1) * sizeof(char *));
			if (!c.roots)
				die("out of memory");
			c.roots[c.nroots++] = optarg;
			break;
		case 'o':
			c.outside = !strcmp(optarg, "keep") ? 1 : !strcmp(optarg, "error") ? 2 : 0;
			break;
		case 'x':
			c.outside_prefix = optarg;
			break;
		case 'l':
			read_listing(&c, optarg);
			break;
		case 'd':
			read_odirect(&c, optarg);
			break;
		case 'p':
			pagesize = strtoll(optarg, NULL, 10);
			break;
		case 'b':
			body = optarg;
			break;
		case 's':
			state = optarg;
			break;
		default:
			die("usage: iocap-convert --root DIR ... --body OUT --state OUT INPUT");
		}
	}
	if (optind != argc - 1 || !c.nroots || !body || !state || pagesize <= 0)
		die("usage: iocap-convert --root DIR ... --pagesize N --body OUT --state OUT INPUT");
	in = fopen(argv[optind], "r");
	if (!in)
		die("cannot read %s: %s", argv[optind], strerror(errno));
	/* beside --body (the caller's temporary directory, $TMPDIR), not tmpfile()'s /tmp */
	{
		char *sp = xmalloc(strlen(body) + 8);

		sprintf(sp, "%s.spool", body);
		c.spool = fopen(sp, "w+x");
		if (!c.spool)
			die("cannot make %s: %s", sp, strerror(errno));
		unlink(sp);
		free(sp);
	}
	while ((len = getline(&line, &cap, in)) >= 0) {
		c.line++;
		if ((size_t)len != strlen(line))
			conv_fallback(&c, "a NUL byte");
		feed(&c, line);
	}
	if (ferror(in))
		die("cannot read %s: %s", argv[optind], strerror(errno));
	free(line);
	fclose(in);
	if (fflush(c.spool))
		die("cannot write the spool: %s", strerror(errno));
	conv_build_files(&c);
	write_body(&c, body, pagesize, &written, ops);
	write_state(&c, state, written, ops);
	return 0;
}
