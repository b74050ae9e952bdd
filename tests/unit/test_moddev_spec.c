/* Tests of the model specs of the modeled-device daemon (tools/moddev/devspec.h). */
#include <string.h>

#include "devspec.h"
#include "test.h"

static int parse(const char *spec, const struct dev_model_type **t, struct dev_params *p, char *err,
		 size_t errlen)
{
	err[0] = '\0';
	return dev_spec_parse(dev_model_types, spec, strlen(spec), t, p, err, errlen);
}

/* @spec is refused with exactly @want. */
static void refused(const char *spec, const char *want)
{
	const struct dev_model_type *t = NULL;
	struct dev_params p;
	char err[256];

	CHECK(parse(spec, &t, &p, err, sizeof(err)) == -1);
	CHECK_STREQ(err, want);
	CHECK(!strchr(err, '\n'));
}

/* @spec is refused with a line that starts with @want (the list of models grows). */
static void refused_start(const char *spec, const char *want)
{
	const struct dev_model_type *t = NULL;
	struct dev_params p;
	char err[512];

	CHECK(parse(spec, &t, &p, err, sizeof(err)) == -1);
	CHECK(!strncmp(err, want, strlen(want)));
	CHECK(err[strlen(err) - 1] == ')' && !strchr(err, '\n'));
}

TEST(moddev_spec_fixed_as_written)
{
	const struct dev_model_type *t = NULL;
	struct dev_params p;
	char err[256];

	CHECK(parse("fixed:channels=4,latency_us=1000", &t, &p, err, sizeof(err)) == 0);
	CHECK(t == &dev_model_fixed);
	CHECK(p.v[dev_param_index(t, "channels")] == 4);
	CHECK(p.v[dev_param_index(t, "latency_us")] == 1000);
	CHECK(!p.given[dev_param_index(t, "write_latency_us")]);
	CHECK(!p.given[dev_param_index(t, "mbps")]);

	CHECK(parse("fixed:channels=1,latency_us=62.5,write_latency_us=0,mbps=250", &t, &p, err,
		    sizeof(err)) == 0);
	CHECK(p.v[dev_param_index(t, "latency_us")] == 62.5);
	CHECK(p.given[dev_param_index(t, "write_latency_us")]);
	CHECK(p.v[dev_param_index(t, "write_latency_us")] == 0);
	CHECK(p.v[dev_param_index(t, "mbps")] == 250);
	/* the order of the keys is free */
	CHECK(parse("fixed:latency_us=8000,channels=1", &t, &p, err, sizeof(err)) == 0);
}

TEST(moddev_spec_bad_values_name_the_key)
{
	refused("fixed:channels=0,latency_us=1000", "fixed: channels=0: must be at least 1");
	refused("fixed:channels=4,latency_us=-5", "fixed: latency_us=-5: must be at least 0");
	refused("fixed:channels=4,latency_us=1,write_latency_us=-0.5",
		"fixed: write_latency_us=-0.5: must be at least 0");
	refused("fixed:channels=2.5,latency_us=1", "fixed: channels=2.5: must be a whole number");
	refused("fixed:channels=1025,latency_us=1", "fixed: channels=1025: must be at most 1024");
	refused("fixed:channels=4,latency_us=1ms", "fixed: latency_us=1ms: not a number");
	refused("fixed:channels=,latency_us=1", "fixed: channels=: not a number");
	refused("fixed:channels=0x10,latency_us=1", "fixed: channels=0x10: not a number");
	refused("fixed:channels=4,latency_us=1e3", "fixed: latency_us=1e3: not a number");
	refused("fixed:channels=4,latency_us=nan", "fixed: latency_us=nan: not a number");
	refused("fixed:channels=4,latency_us=1.", "fixed: latency_us=1.: not a number");
	refused("fixed:channels=4,latency_us=1,mbps=0", "fixed: mbps=0: must be at least 0.1");
}

TEST(moddev_spec_bad_shapes)
{
	refused("fixed:channels=4,latency_us=1,foo=3",
		"fixed: unknown key 'foo' (keys: channels, latency_us, write_latency_us, mbps)");
	refused_start("nosuch", "model: unknown model 'nosuch' (models: fixed, hdd");
	refused_start("Fixed:channels=1,latency_us=1",
		      "model: unknown model 'Fixed' (models: fixed, ");
	refused("", "model: empty spec");
	refused(":channels=1", "model: no model name before ':'");
	refused("fixed", "fixed: channels is required");
	refused("fixed:channels=4", "fixed: latency_us is required");
	refused("fixed:", "fixed: nothing after ':'");
	refused("fixed:channels=4,,latency_us=1", "fixed: '' is not key=value");
	refused("fixed:channels=4,latency_us=1,", "fixed: '' is not key=value");
	refused("fixed:channels", "fixed: 'channels' is not key=value");
	refused("fixed:=4", "fixed: '=4' is not key=value");
	refused("fixed:channels=4,channels=5,latency_us=1", "fixed: channels given twice");
	refused("fixed:channels=(4,latency_us=1", "fixed: unbalanced parentheses in "
						  "'channels=(4,latency_us=1'");
	refused("fixed:channels=(4),latency_us=1", "fixed: channels=(4): not a number");
}

TEST(moddev_spec_long_text_stays_one_short_line)
{
	char spec[400], err[256];
	const struct dev_model_type *t;
	struct dev_params p;

	memset(spec, 'x', sizeof(spec) - 1);
	spec[sizeof(spec) - 1] = '\0';
	CHECK(parse(spec, &t, &p, err, sizeof(err)) == -1);
	/* the user's text quoted short (the list of models that follows grows with them) */
	CHECK(strstr(err, "xxxx'") && !strstr(err, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"));
	memcpy(spec, "fixed:", 6);
	CHECK(parse(spec, &t, &p, err, sizeof(err)) == -1);
	CHECK(strlen(err) < 160);
	CHECK(!strncmp(err, "fixed: ", 7));
	/* a control character in the user's text does not split the line */
	CHECK(parse("fixed:chan\nnels=1", &t, &p, err, sizeof(err)) == -1);
	CHECK(!strchr(err, '\n'));
}

/*
 * The parts a composite model will use, on a made-up table: a member model
 * in parentheses (checked when the spec is parsed, its errors naming the
 * member's model), a named model standing for a spec.
 */
/* clang-format off */
static const struct dev_param pair_params[] = {
	{ "members", 2, 8, 2, 0, 1, 0, "how many" },
	{ "member", 0, 0, 0, 1, 0, 1, "the member model" },
};
/* clang-format on */
static const struct dev_model_type pair = {
	.name = "pair",
	.params = pair_params,
	.nparams = 2,
};
static const char *const named_sources[] = { "a datasheet", NULL };
static const struct dev_model_type named = {
	.name = "named",
	.alias_of = "fixed:channels=2,latency_us=80",
	.sources = named_sources,
};
static const struct dev_model_type *const test_types[] = { &dev_model_fixed, &pair, &named, NULL };

static int parse_test(const char *spec, const struct dev_model_type **t, struct dev_params *p,
		      char *err, size_t errlen)
{
	err[0] = '\0';
	return dev_spec_parse(test_types, spec, strlen(spec), t, p, err, errlen);
}

TEST(moddev_spec_member_models_and_named_models)
{
	const struct dev_model_type *t;
	struct dev_params p;
	char err[256];

	CHECK(parse_test("pair:member=(fixed:channels=1,latency_us=80)", &t, &p, err,
			 sizeof(err)) == 0);
	CHECK(t == &pair);
	CHECK(p.v[0] == 2 && !p.given[0]);
	CHECK(p.sublen[1] == strlen("fixed:channels=1,latency_us=80"));
	CHECK(!memcmp(p.sub[1], "fixed:channels=1,latency_us=80", p.sublen[1]));
	CHECK(parse_test("pair:member=(pair:member=(named)),members=3", &t, &p, err, sizeof(err)) ==
	      0);
	CHECK(p.v[0] == 3);

	CHECK(parse_test("pair:member=(fixed:channels=0,latency_us=80)", &t, &p, err,
			 sizeof(err)) == -1);
	CHECK_STREQ(err, "fixed: channels=0: must be at least 1");
	CHECK(parse_test("pair:member=fixed", &t, &p, err, sizeof(err)) == -1);
	CHECK_STREQ(err, "pair: member=fixed: a member model goes in parentheses: member=(SPEC)");
	CHECK(parse_test("pair:member=(pair:member=(pair:member=(pair:member=(pair:member=("
			 "pair:member=(named))))))",
			 &t, &p, err, sizeof(err)) == -1);
	CHECK_STREQ(err, "model: member models nested more than 4 deep");

	CHECK(parse_test("named", &t, &p, err, sizeof(err)) == 0);
	CHECK(t == &dev_model_fixed);
	CHECK(p.v[dev_param_index(t, "latency_us")] == 80);
	CHECK(parse_test("named:channels=3", &t, &p, err, sizeof(err)) == -1);
	CHECK_STREQ(err, "named: a named model takes no parameters (it is "
			 "fixed:channels=2,latency_us=80)");
}

TEST(moddev_spec_every_model_is_creatable_and_documented)
{
	const struct dev_model_type *const *t;
	unsigned i;

	for (t = dev_model_types; *t; t++) {
		CHECK((*t)->summary && *(*t)->summary);
		CHECK((*t)->sources && (*t)->sources[0]);
		CHECK((*t)->nparams <= DEV_MAX_PARAMS);
		CHECK((*t)->alias_of || (*t)->create);
		for (i = 0; i < (*t)->nparams; i++)
			CHECK((*t)->params[i].help && *(*t)->params[i].help);
	}
}
