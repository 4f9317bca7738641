/*-------------------------------------------------------------------------
 *
 * histogram_io.c
 *	  Text and binary input and output of the prom_histogram type.
 *
 * The text form is a JSON object that reads back as the same value bit
 * for bit, so it can be cast to jsonb too:
 *
 *	{"kind":"integer","schema":3,"zero_threshold":1e-128,"zero_count":2,
 *	 "count":10,"sum":12.5,"positive_spans":[[0,2],[1,1]],
 *	 "positive_deltas":[1,2,-1],"negative_spans":[],"negative_deltas":[],
 *	 "reset_hint":"unknown"}
 *
 * Output writes the keys in that order; a float histogram has "kind":"float"
 * and "positive_counts" and "negative_counts" instead of deltas, and
 * "custom_values" comes before "reset_hint" when the schema is -53.
 * Doubles are the shortest decimal that reads back as the same double, or,
 * as JSON has none, the strings "NaN", "+Inf" and "-Inf"; a NaN whose bits
 * are not those of "NaN" (0x7ff8000000000000), such as Prometheus's stale
 * marker, is "NaN:0x7ff0000000000002", its bits in hex.  Input takes the
 * keys in any order, each at most once; a missing key is its default (an
 * integer histogram, schema 0, zeros, no spans or buckets, reset hint
 * "unknown").  The JSON is parsed with PostgreSQL's JSON lexer, which hands
 * over each number's text, so numbers are converted here exactly (-0
 * included) and integers are never rounded through a double.
 *
 * The binary form is the header's fields in network order (kind and hint
 * one byte each, schema two, the five counts four, then count, zero count,
 * zero threshold and sum eight each), then the spans (offset and length,
 * four bytes each), the buckets and the custom values (eight each).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <inttypes.h>
#include <math.h>

#include "common/jsonapi.h"
#include "common/shortest_dec.h"
#include "histogram/histogram.h"
#include "libpq/pqformat.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/jsonfuncs.h"

PG_FUNCTION_INFO_V1(prom_histogram_in);
PG_FUNCTION_INFO_V1(prom_histogram_out);
PG_FUNCTION_INFO_V1(prom_histogram_recv);
PG_FUNCTION_INFO_V1(prom_histogram_send);

/* The bits of the NaN written as "NaN": C's NAN, PostgreSQL's NaN. */
#define CANONICAL_NAN_BITS	UINT64CONST(0x7ff8000000000000)

static const char *const reset_hint_names[] = {"unknown", "yes", "no", "gauge"};

/* The keys of the text form, in output order. */
typedef enum HistogramKey
{
	KEY_KIND,
	KEY_SCHEMA,
	KEY_ZERO_THRESHOLD,
	KEY_ZERO_COUNT,
	KEY_COUNT,
	KEY_SUM,
	KEY_POSITIVE_SPANS,
	KEY_POSITIVE_DELTAS,
	KEY_POSITIVE_COUNTS,
	KEY_NEGATIVE_SPANS,
	KEY_NEGATIVE_DELTAS,
	KEY_NEGATIVE_COUNTS,
	KEY_CUSTOM_VALUES,
	KEY_RESET_HINT,
	NUM_KEYS
} HistogramKey;

static const char *const key_names[NUM_KEYS] = {
	"kind", "schema", "zero_threshold", "zero_count", "count", "sum",
	"positive_spans", "positive_deltas", "positive_counts",
	"negative_spans", "negative_deltas", "negative_counts",
	"custom_values", "reset_hint"
};

/* Whether a key's value is an array (of numbers, or of [offset, length]). */
static inline bool
key_is_array(HistogramKey key)
{
	return key >= KEY_POSITIVE_SPANS && key <= KEY_CUSTOM_VALUES;
}

static inline bool
key_is_spans(HistogramKey key)
{
	return key == KEY_POSITIVE_SPANS || key == KEY_NEGATIVE_SPANS;
}

/* A JSON scalar as the lexer gave it. */
typedef struct JsonScalar
{
	char	   *text;
	JsonTokenType type;
} JsonScalar;

/* What the JSON parser's callbacks gather: each key's scalars. */
typedef struct TextParse
{
	int			depth;			/* 1 in the object, 2 in an array, 3 in a span */
	HistogramKey key;			/* the key whose value is being read */
	bool		seen[NUM_KEYS];
	JsonScalar	scalar[NUM_KEYS];	/* a key's value when it is a scalar */
	JsonScalar *items[NUM_KEYS];	/* an array's elements (a span's two) */
	uint32		nitems[NUM_KEYS];
	uint32		allocated[NUM_KEYS];
	int			span_elements;	/* elements of the span being read */
} TextParse;

/* JSON callback: an object starts; only the outermost value may be one. */
static PROM_JSON_CALLBACK
on_object_start(void *arg)
{
	TextParse *state = arg;

	if (state->depth > 0)
		PromHistogramInvalidText("\"%s\" cannot hold an object", key_names[state->key]);
	state->depth = 1;
	PROM_JSON_DONE;
}

/* JSON callback: a key of an object, necessarily the outermost one. */
static PROM_JSON_CALLBACK
on_field_start(void *arg, char *name, bool isnull)
{
	TextParse *state = arg;
	int			key;

	for (key = 0; key < NUM_KEYS; key++)
		if (strcmp(name, key_names[key]) == 0)
			break;
	if (key == NUM_KEYS)
		PromHistogramInvalidText("unrecognized key \"%s\"", name);
	if (state->seen[key])
		PromHistogramInvalidText("key \"%s\" appears twice", name);
	state->seen[key] = true;
	state->key = key;
	PROM_JSON_DONE;
}

/* JSON callback: an array starts, a key's value or a span. */
static PROM_JSON_CALLBACK
on_array_start(void *arg)
{
	TextParse *state = arg;

	if (state->depth == 0)
		PromHistogramInvalidText("a prom_histogram is a JSON object");
	if (state->depth == 1 && !key_is_array(state->key))
		PromHistogramInvalidText("\"%s\" cannot be an array", key_names[state->key]);
	if (state->depth == 2 && !key_is_spans(state->key))
		PromHistogramInvalidText("the elements of \"%s\" are numbers", key_names[state->key]);
	if (state->depth == 3)
		PromHistogramInvalidText("a span of \"%s\" is [offset, length]", key_names[state->key]);
	state->depth++;
	state->span_elements = 0;
	PROM_JSON_DONE;
}

/* JSON callback: an array ends; a span must have had two elements. */
static PROM_JSON_CALLBACK
on_array_end(void *arg)
{
	TextParse *state = arg;

	if (state->depth == 3 && state->span_elements != 2)
		PromHistogramInvalidText("a span of \"%s\" is [offset, length]", key_names[state->key]);
	state->depth--;
	PROM_JSON_DONE;
}

/* Keep a scalar as an element of the current key's array. */
static void
add_item(TextParse *state, char *text, JsonTokenType type)
{
	HistogramKey key = state->key;

	if (state->nitems[key] == state->allocated[key])
	{
		/* refuse a bucket-count bomb before it costs memory */
		uint32		n = state->nitems[key] / (key_is_spans(key) ? 2 : 1);

		PromHistogramCheckSizes(key_is_spans(key) ? n : 0, 0,
								key == KEY_CUSTOM_VALUES || key_is_spans(key) ? 0 : n,
								0, key == KEY_CUSTOM_VALUES ? n : 0);
		state->allocated[key] = Max(16, state->allocated[key] * 2);
		state->items[key] = state->items[key] == NULL ?
			palloc(sizeof(JsonScalar) * state->allocated[key]) :
			repalloc(state->items[key], sizeof(JsonScalar) * state->allocated[key]);
	}
	state->items[key][state->nitems[key]].text = text;
	state->items[key][state->nitems[key]].type = type;
	state->nitems[key]++;
}

/* JSON callback: a scalar, a key's value or an array's element. */
static PROM_JSON_CALLBACK
on_scalar(void *arg, char *token, JsonTokenType type)
{
	TextParse *state = arg;

	if (state->depth == 0)
		PromHistogramInvalidText("a prom_histogram is a JSON object");
	if (state->depth == 1)
	{
		if (key_is_array(state->key))
			PromHistogramInvalidText("\"%s\" must be an array", key_names[state->key]);
		state->scalar[state->key].text = token;
		state->scalar[state->key].type = type;
		PROM_JSON_DONE;
	}
	if (state->depth == 2 && key_is_spans(state->key))
		PromHistogramInvalidText("a span of \"%s\" is [offset, length]", key_names[state->key]);
	if (state->depth == 3 && ++state->span_elements > 2)
		PromHistogramInvalidText("a span of \"%s\" is [offset, length]", key_names[state->key]);
	add_item(state, token, type);
	PROM_JSON_DONE;
}

/* A JSON integer in [min, max]; what names the value in errors. */
static int64
scalar_int64(const JsonScalar *s, int64 min, int64 max, const char *what)
{
	char	   *end;
	int64		value;

	if (s->type != JSON_TOKEN_NUMBER)
		PromHistogramInvalidText("%s must be an integer", what);
	errno = 0;
	value = strtoi64(s->text, &end, 10);
	if (*end != '\0')
		PromHistogramInvalidText("%s must be an integer, not %s", what, s->text);
	if (errno == ERANGE || value < min || value > max)
		PromHistogramInvalidText("%s %s is out of range", what, s->text);
	return value;
}

/* A JSON unsigned integer up to 2^64 - 1. */
static uint64
scalar_uint64(const JsonScalar *s, const char *what)
{
	char	   *end;
	uint64		value;

	if (s->type != JSON_TOKEN_NUMBER || s->text[0] == '-')
		PromHistogramInvalidText("%s must be an integer that is not negative", what);
	errno = 0;
	value = strtou64(s->text, &end, 10);
	if (*end != '\0')
		PromHistogramInvalidText("%s must be an integer, not %s", what, s->text);
	if (errno == ERANGE)
		PromHistogramInvalidText("%s %s is out of range", what, s->text);
	return value;
}

/* A double: a JSON number, or "NaN", "+Inf", "-Inf", "NaN:0x<16 hex digits>". */
static double
scalar_double(const JsonScalar *s, const char *what)
{
	double		value;
	char	   *end;

	if (s->type == JSON_TOKEN_NUMBER)
	{
		errno = 0;
		value = strtod(s->text, &end);
		/* as float8in: refuse overflow and underflow to zero, not denormals */
		if (*end != '\0' ||
			(errno == ERANGE && (value == 0 || isinf(value))))
			PromHistogramInvalidText("%s %s is out of range for a double", what, s->text);
		return value;
	}
	if (s->type == JSON_TOKEN_STRING)
	{
		uint64		bits;

		if (strcmp(s->text, "NaN") == 0)
			bits = CANONICAL_NAN_BITS;
		else if (strcmp(s->text, "+Inf") == 0)
			return get_float8_infinity();
		else if (strcmp(s->text, "-Inf") == 0)
			return -get_float8_infinity();
		else if (strncmp(s->text, "NaN:0x", 6) == 0 && strlen(s->text) == 22 &&
				 strspn(s->text + 6, "0123456789abcdefABCDEF") == 16)
			bits = strtou64(s->text + 6, NULL, 16);
		else
			PromHistogramInvalidText("%s must be a number, \"NaN\", \"+Inf\", \"-Inf\" or \"NaN:0x\" and 16 hex digits",
						 what);
		memcpy(&value, &bits, sizeof(value));
		if (!isnan(value))
			PromHistogramInvalidText("%s %s is not a NaN", what, s->text);
		return value;
	}
	PromHistogramInvalidText("%s must be a number or a string", what);
}

/* A string among names; what names the key in errors. */
static int
scalar_choice(const JsonScalar *s, const char *const *names, int nnames,
			  const char *what)
{
	StringInfoData choices;

	if (s->type == JSON_TOKEN_STRING)
		for (int i = 0; i < nnames; i++)
			if (strcmp(s->text, names[i]) == 0)
				return i;
	initStringInfo(&choices);
	for (int i = 0; i < nnames; i++)
		appendStringInfo(&choices, "%s\"%s\"", i > 0 ? ", " : "", names[i]);
	PromHistogramInvalidText("\"%s\" must be one of %s", what, choices.data);
}

/* Fill spans from a key's gathered [offset, length] pairs. */
static void
fill_spans(const TextParse *state, HistogramKey key, PromBucketSpan *spans)
{
	for (uint32 i = 0; i < state->nitems[key] / 2; i++)
	{
		spans[i].offset = scalar_int64(&state->items[key][2 * i], PG_INT32_MIN,
									   PG_INT32_MAX, "a span offset");
		spans[i].length = scalar_int64(&state->items[key][2 * i + 1], 0,
									   PG_UINT32_MAX, "a span length");
	}
}

/* Fill buckets from a key's gathered numbers, deltas or counts. */
static void
fill_buckets(const TextParse *state, HistogramKey key, bool is_float,
			 PromHistogramBucket *buckets)
{
	for (uint32 i = 0; i < state->nitems[key]; i++)
	{
		if (is_float)
			buckets[i].count = scalar_double(&state->items[key][i], "a bucket count");
		else
			buckets[i].delta = scalar_int64(&state->items[key][i], PG_INT64_MIN,
											PG_INT64_MAX, "a bucket delta");
	}
}

/* The value the keys gathered by the parser describe. */
static PromHistogram *
histogram_from_keys(const TextParse *state)
{
	bool		is_float = false;
	HistogramKey positive,
				negative,
				wrong;
	PromHistogram *h;

	if (state->seen[KEY_KIND])
		is_float = scalar_choice(&state->scalar[KEY_KIND],
								 (const char *const[]) {"integer", "float"}, 2,
								 "kind") == 1;
	positive = is_float ? KEY_POSITIVE_COUNTS : KEY_POSITIVE_DELTAS;
	negative = is_float ? KEY_NEGATIVE_COUNTS : KEY_NEGATIVE_DELTAS;
	for (wrong = KEY_POSITIVE_DELTAS; wrong <= KEY_NEGATIVE_COUNTS; wrong++)
		if (state->seen[wrong] && !key_is_spans(wrong) &&
			wrong != positive && wrong != negative)
			PromHistogramInvalidText("%s histogram has no \"%s\"; its buckets are \"%s\" and \"%s\"",
						 is_float ? "a float" : "an integer", key_names[wrong],
						 key_names[positive], key_names[negative]);

	PromHistogramCheckSizes(state->nitems[KEY_POSITIVE_SPANS] / 2,
							state->nitems[KEY_NEGATIVE_SPANS] / 2,
							state->nitems[positive], state->nitems[negative],
							state->nitems[KEY_CUSTOM_VALUES]);
	h = PromHistogramAllocate(state->nitems[KEY_POSITIVE_SPANS] / 2,
							  state->nitems[KEY_NEGATIVE_SPANS] / 2,
							  state->nitems[positive], state->nitems[negative],
							  state->nitems[KEY_CUSTOM_VALUES]);
	h->kind = is_float ? PROM_HISTOGRAM_FLOAT : PROM_HISTOGRAM_INTEGER;
	if (state->seen[KEY_SCHEMA])
		h->schema = scalar_int64(&state->scalar[KEY_SCHEMA], PG_INT16_MIN,
								 PG_INT16_MAX, "schema");
	if (state->seen[KEY_ZERO_THRESHOLD])
		h->zero_threshold = scalar_double(&state->scalar[KEY_ZERO_THRESHOLD],
										  "zero_threshold");
	if (state->seen[KEY_SUM])
		h->sum = scalar_double(&state->scalar[KEY_SUM], "sum");
	if (state->seen[KEY_COUNT] && is_float)
		h->count.value = scalar_double(&state->scalar[KEY_COUNT], "count");
	else if (state->seen[KEY_COUNT])
		h->count.integer = scalar_uint64(&state->scalar[KEY_COUNT], "count");
	if (state->seen[KEY_ZERO_COUNT] && is_float)
		h->zero_count.value = scalar_double(&state->scalar[KEY_ZERO_COUNT], "zero_count");
	else if (state->seen[KEY_ZERO_COUNT])
		h->zero_count.integer = scalar_uint64(&state->scalar[KEY_ZERO_COUNT], "zero_count");
	if (state->seen[KEY_RESET_HINT])
		h->reset_hint = scalar_choice(&state->scalar[KEY_RESET_HINT],
									  reset_hint_names, lengthof(reset_hint_names),
									  "reset_hint");
	fill_spans(state, KEY_POSITIVE_SPANS, PromHistogramPositiveSpans(h));
	fill_spans(state, KEY_NEGATIVE_SPANS, PromHistogramNegativeSpans(h));
	fill_buckets(state, positive, is_float, PromHistogramPositiveBuckets(h));
	fill_buckets(state, negative, is_float, PromHistogramNegativeBuckets(h));
	for (uint32 i = 0; i < state->nitems[KEY_CUSTOM_VALUES]; i++)
		PromHistogramCustomValues(h)[i] =
			scalar_double(&state->items[KEY_CUSTOM_VALUES][i], "a custom bucket bound");
	return h;
}

/* prom_histogram_in(cstring): the value of a text form (see above). */
Datum
prom_histogram_in(PG_FUNCTION_ARGS)
{
	char	   *text = PG_GETARG_CSTRING(0);
	TextParse	state = {0};
	JsonSemAction sem = {0};
	JsonLexContext *lex;
	PromHistogram *h;

	sem.semstate = &state;
	sem.object_start = on_object_start;
	sem.object_field_start = on_field_start;
	sem.array_start = on_array_start;
	sem.array_end = on_array_end;
	sem.scalar = on_scalar;
	lex = PromJsonLexer(text, strlen(text));
	pg_parse_json_or_ereport(lex, &sem);

	h = histogram_from_keys(&state);
	PromHistogramCheck(h);
	PG_RETURN_PROM_HISTOGRAM_P(h);
}

/* Append a double as the text form writes it (see the header comment). */
static void
append_double(StringInfo buf, double value)
{
	uint64		bits;

	memcpy(&bits, &value, sizeof(bits));
	if (isnan(value) && bits == CANONICAL_NAN_BITS)
		appendStringInfoString(buf, "\"NaN\"");
	else if (isnan(value))
		appendStringInfo(buf, "\"NaN:0x%016" PRIx64 "\"", bits);
	else if (isinf(value))
		appendStringInfoString(buf, value > 0 ? "\"+Inf\"" : "\"-Inf\"");
	else
	{
		char		digits[DOUBLE_SHORTEST_DECIMAL_LEN];

		double_to_shortest_decimal_buf(value, digits);
		appendStringInfoString(buf, digits);
	}
}

/* Append a count: an unsigned integer, or a double for float histograms. */
static void
append_count(StringInfo buf, const PromHistogram *h, PromHistogramCount count)
{
	if (PromHistogramIsFloat(h))
		append_double(buf, count.value);
	else
		appendStringInfo(buf, UINT64_FORMAT, count.integer);
}

/* Append ,"key":[[offset,length],...]. */
static void
append_spans(StringInfo buf, const char *key, const PromBucketSpan *spans,
			 uint32 n)
{
	appendStringInfo(buf, ",\"%s\":[", key);
	for (uint32 i = 0; i < n; i++)
		appendStringInfo(buf, "%s[%d,%u]", i > 0 ? "," : "",
						 spans[i].offset, spans[i].length);
	appendStringInfoChar(buf, ']');
}

/* Append ,"key":[...] of buckets: deltas, or counts for float histograms. */
static void
append_buckets(StringInfo buf, const PromHistogram *h, const char *sign,
			   const PromHistogramBucket *buckets, uint32 n)
{
	bool		is_float = PromHistogramIsFloat(h);

	appendStringInfo(buf, ",\"%s_%s\":[", sign, is_float ? "counts" : "deltas");
	for (uint32 i = 0; i < n; i++)
	{
		if (i > 0)
			appendStringInfoChar(buf, ',');
		if (is_float)
			append_double(buf, buckets[i].count);
		else
			appendStringInfo(buf, INT64_FORMAT, buckets[i].delta);
	}
	appendStringInfoChar(buf, ']');
}

/* prom_histogram_out(prom_histogram): the text form (see above). */
Datum
prom_histogram_out(PG_FUNCTION_ARGS)
{
	PromHistogram *h = PG_GETARG_PROM_HISTOGRAM_P(0);
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"kind\":\"%s\",\"schema\":%d,\"zero_threshold\":",
					 PromHistogramIsFloat(h) ? "float" : "integer", h->schema);
	append_double(&buf, h->zero_threshold);
	appendStringInfoString(&buf, ",\"zero_count\":");
	append_count(&buf, h, h->zero_count);
	appendStringInfoString(&buf, ",\"count\":");
	append_count(&buf, h, h->count);
	appendStringInfoString(&buf, ",\"sum\":");
	append_double(&buf, h->sum);
	append_spans(&buf, "positive_spans", PromHistogramPositiveSpans(h),
				 h->npositive_spans);
	append_buckets(&buf, h, "positive", PromHistogramPositiveBuckets(h),
				   h->npositive_buckets);
	append_spans(&buf, "negative_spans", PromHistogramNegativeSpans(h),
				 h->nnegative_spans);
	append_buckets(&buf, h, "negative", PromHistogramNegativeBuckets(h),
				   h->nnegative_buckets);
	if (h->schema == PROM_SCHEMA_CUSTOM || h->ncustom_values > 0)
	{
		appendStringInfoString(&buf, ",\"custom_values\":[");
		for (uint32 i = 0; i < h->ncustom_values; i++)
		{
			if (i > 0)
				appendStringInfoChar(&buf, ',');
			append_double(&buf, PromHistogramCustomValues(h)[i]);
		}
		appendStringInfoChar(&buf, ']');
	}
	appendStringInfo(&buf, ",\"reset_hint\":\"%s\"}",
					 h->reset_hint < lengthof(reset_hint_names) ?
					 reset_hint_names[h->reset_hint] : "unknown");
	PG_RETURN_CSTRING(buf.data);
}

/* prom_histogram_send(prom_histogram): the binary form (see above). */
Datum
prom_histogram_send(PG_FUNCTION_ARGS)
{
	PromHistogram *h = PG_GETARG_PROM_HISTOGRAM_P(0);
	const PromBucketSpan *spans = PromHistogramPositiveSpans(h);
	const PromHistogramBucket *buckets = PromHistogramPositiveBuckets(h);
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint8(&buf, h->kind);
	pq_sendint8(&buf, h->reset_hint);
	pq_sendint16(&buf, h->schema);
	pq_sendint32(&buf, h->npositive_spans);
	pq_sendint32(&buf, h->nnegative_spans);
	pq_sendint32(&buf, h->npositive_buckets);
	pq_sendint32(&buf, h->nnegative_buckets);
	pq_sendint32(&buf, h->ncustom_values);
	pq_sendint64(&buf, h->count.integer);
	pq_sendint64(&buf, h->zero_count.integer);
	pq_sendfloat8(&buf, h->zero_threshold);
	pq_sendfloat8(&buf, h->sum);
	/* spans and buckets of both signs are contiguous */
	for (uint32 i = 0; i < h->npositive_spans + h->nnegative_spans; i++)
	{
		pq_sendint32(&buf, spans[i].offset);
		pq_sendint32(&buf, spans[i].length);
	}
	for (uint32 i = 0; i < h->npositive_buckets + h->nnegative_buckets; i++)
		pq_sendint64(&buf, buckets[i].delta);
	for (uint32 i = 0; i < h->ncustom_values; i++)
		pq_sendfloat8(&buf, PromHistogramCustomValues(h)[i]);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/* prom_histogram_recv(internal): a value of the binary form, checked. */
Datum
prom_histogram_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	uint8		kind = pq_getmsgint(buf, 1);
	uint8		reset_hint = pq_getmsgint(buf, 1);
	int16		schema = pq_getmsgint(buf, 2);
	uint32		npositive_spans = pq_getmsgint(buf, 4);
	uint32		nnegative_spans = pq_getmsgint(buf, 4);
	uint32		npositive_buckets = pq_getmsgint(buf, 4);
	uint32		nnegative_buckets = pq_getmsgint(buf, 4);
	uint32		ncustom_values = pq_getmsgint(buf, 4);
	PromHistogram *h;
	PromBucketSpan *spans;
	PromHistogramBucket *buckets;

	/* sizes within the limit and the message before anything is allocated */
	PromHistogramCheckSizes(npositive_spans, nnegative_spans, npositive_buckets,
							nnegative_buckets, ncustom_values);
	if ((Size) (buf->len - buf->cursor) !=
		4 * sizeof(uint64) - PROM_HISTOGRAM_HEADER_SIZE +
		PromHistogramSize(npositive_spans, nnegative_spans, npositive_buckets,
						  nnegative_buckets, ncustom_values))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid binary prom_histogram: its length does not match its counts")));

	h = PromHistogramAllocate(npositive_spans, nnegative_spans, npositive_buckets,
							  nnegative_buckets, ncustom_values);
	h->kind = kind;
	h->reset_hint = reset_hint;
	h->schema = schema;
	h->count.integer = pq_getmsgint64(buf);
	h->zero_count.integer = pq_getmsgint64(buf);
	h->zero_threshold = pq_getmsgfloat8(buf);
	h->sum = pq_getmsgfloat8(buf);
	spans = PromHistogramPositiveSpans(h);
	for (uint32 i = 0; i < npositive_spans + nnegative_spans; i++)
	{
		spans[i].offset = pq_getmsgint(buf, 4);
		spans[i].length = pq_getmsgint(buf, 4);
	}
	buckets = PromHistogramPositiveBuckets(h);
	for (uint32 i = 0; i < npositive_buckets + nnegative_buckets; i++)
		buckets[i].delta = pq_getmsgint64(buf);
	for (uint32 i = 0; i < ncustom_values; i++)
		PromHistogramCustomValues(h)[i] = pq_getmsgfloat8(buf);
	pq_getmsgend(buf);
	PromHistogramCheck(h);
	PG_RETURN_PROM_HISTOGRAM_P(h);
}
