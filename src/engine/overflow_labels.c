/*-------------------------------------------------------------------------
 *
 * overflow_labels.c
 *	  Overflow labels: the labels of a series that have no column of their
 *	  own, kept in a jsonb column of label names and values (a table that
 *	  remote write made past its label columns).
 *
 * A layout's column of overflow labels (PromLayoutSetOverflow, layout.c) is
 * a BINARY column whose key is the jsonb's bytes, the same for the same
 * labels.  Each distinct value is parsed once, when first seen, into its
 * labels sorted by name bytewise (LabelPairs), each value a TEXT value of
 * its own; so the per-series work is done once per distinct set of
 * overflow labels, and nothing per row.  This file parses them, decides
 * the column's matchers on them, and merges them with the columns' labels
 * in name order for the output; order.c numbers them with the others.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "series_set.h"
#include "utils/jsonb.h"

/* A label of a jsonb object of overflow labels, being parsed. */
typedef struct RawPair
{
	const char *name;
	int			name_len;
	const char *value;
	int			value_len;
} RawPair;

/* qsort comparator of raw pairs by name, bytewise. */
static int
raw_pair_cmp(const void *a, const void *b)
{
	const RawPair *x = a;
	const RawPair *y = b;

	return compare_bytes(x->name, x->name_len, y->name, y->name_len);
}

/* Is a name one of a layout's columns' (whose label wins over a pair's)? */
static bool
is_column_name(const PromLayout *layout, const char *name, int len)
{
	int			lo = 0;
	int			hi = layout->ncolumns - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;
		int			column = layout->name_order[mid];
		int			cmp = compare_bytes(layout->names[column],
										layout->name_lens[column], name, len);

		if (cmp == 0)
			return true;
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return false;
}

/* A TEXT value of an overflow label, its bytes checked as UTF-8. */
static PromLabelValue *
pair_value(PromSeriesSet *set, const char *name, const char *bytes, int len)
{
	PromLabelValue *value;

	if (!PromIsValidUtf8(bytes, len))
		ereport(ERROR,
				(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
				 errmsg("value of label \"%s\" is not valid UTF-8", name)));
	value = arena_alloc(set, offsetof(PromLabelValue, text) + len + 1);
	value->ordinal = 0;
	value->verdict = VERDICT_UNKNOWN;
	memcpy(value->text, bytes, len);
	value->text[len] = '\0';
	value->text_len = len;
	return value;
}

/*
 * The labels of a jsonb object of overflow labels of a layout, allocated in
 * the set's arena: those with a value, sorted by name.  Names that are not
 * label names, __name__, and names of the layout's columns are left out
 * (remote write writes none of them); a value that is not a string is an
 * error (42804: the column holds what promread did not write).
 */
LabelPairs *
PromParseOverflowLabels(PromSeriesSet *set, const PromLayout *layout,
						Datum datum)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(set->row_context);
	LabelPairs *pairs;
	Jsonb	   *jsonb;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken token;
	RawPair    *raw;
	int			n = 0;
	int			i;

	set->row_context_used = true;
	jsonb = DatumGetJsonbP(datum);
	if (!JB_ROOT_IS_OBJECT(jsonb))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("overflow labels must be a jsonb object of strings")));
	raw = palloc(sizeof(RawPair) * Max(JB_ROOT_COUNT(jsonb), 1));
	it = JsonbIteratorInit(&jsonb->root);
	while ((token = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (token == WJB_KEY)
		{
			raw[n].name = v.val.string.val;
			raw[n].name_len = v.val.string.len;
		}
		else if (token == WJB_VALUE)
		{
			if (v.type != jbvString)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("overflow labels must be a jsonb object of strings"),
						 errdetail("Label \"%.*s\" is not a string.",
								   raw[n].name_len, raw[n].name)));
			raw[n].value = v.val.string.val;
			raw[n].value_len = v.val.string.len;
			if (raw[n].value_len > 0 &&
				PromIsValidLabelName(raw[n].name, raw[n].name_len) &&
				!(raw[n].name_len == 8 && memcmp(raw[n].name, "__name__", 8) == 0) &&
				!is_column_name(layout, raw[n].name, raw[n].name_len))
				n++;
		}
	}
	qsort(raw, n, sizeof(RawPair), raw_pair_cmp);
	MemoryContextSwitchTo(oldcxt);

	pairs = arena_alloc(set, sizeof(LabelPairs));
	pairs->npairs = n;
	pairs->names = arena_alloc(set, sizeof(char *) * Max(n, 1));
	pairs->name_lens = arena_alloc(set, sizeof(int) * Max(n, 1));
	pairs->name_parts = arena_alloc(set, sizeof(char *) * Max(n, 1));
	pairs->name_part_lens = arena_alloc(set, sizeof(int) * Max(n, 1));
	pairs->values = arena_alloc(set, sizeof(PromLabelValue *) * Max(n, 1));
	pairs->name_index = NULL;
	pairs->labels_size = 0;
	for (i = 0; i < n; i++)
	{
		char	   *name = arena_alloc(set, raw[i].name_len + 1);

		memcpy(name, raw[i].name, raw[i].name_len);
		name[raw[i].name_len] = '\0';
		pairs->names[i] = name;
		pairs->name_lens[i] = raw[i].name_len;
		pairs->name_part_lens[i] = wire_name_part_size(raw[i].name_len);
		pairs->name_parts[i] = arena_alloc(set, pairs->name_part_lens[i]);
		(void) wire_put_name_part(pairs->name_parts[i], name, raw[i].name_len);
		pairs->values[i] = pair_value(set, name, raw[i].value, raw[i].value_len);
		pairs->labels_size += wire_label_field_size(pairs->name_part_lens[i],
													raw[i].value_len);
	}
	return pairs;
}

/* The place of a label among overflow labels, by name; -1 when absent. */
static int
find_pair(const LabelPairs *pairs, const char *name, int len)
{
	int			lo = 0;
	int			hi = pairs->npairs - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;
		int			cmp = compare_bytes(pairs->names[mid], pairs->name_lens[mid],
										name, len);

		if (cmp == 0)
			return mid;
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/*
 * Does a value of a layout's column of overflow labels pass the column's
 * filters, each decided on its label's value ("" when absent)?
 */
bool
PromPairsPassFilters(const PromLayout *layout, int column,
					 const PromLabelValue *value)
{
	const LabelPairs *pairs = value_pairs(value);
	int			f;

	for (f = 0; f < layout->nfilters; f++)
	{
		const PromMatcher *matcher = layout->filters[f].matcher;
		const char *bytes = "";
		int			len = 0;

		if (layout->filters[f].column != column)
			continue;
		if (pairs != NULL)
		{
			int			i = find_pair(pairs, matcher->name, strlen(matcher->name));

			if (i >= 0)
			{
				bytes = pairs->values[i]->text;
				len = pairs->values[i]->text_len;
			}
		}
		PromPhases.matcher_evaluations++;
		if (!PromMatcherMatches(matcher, bytes, len))
			return false;
	}
	return true;
}

/*
 * PromSeriesLabels of a series with overflow labels (pairs): its columns'
 * present labels and its overflow labels merged in name order.
 */
int
PromSeriesLabelsWithPairs(const PromLayout *layout, const PromSeries *series,
						  const LabelPairs *pairs, PromLabelRef *labels)
{
	int			p = 0;
	int			n = 0;
	int			i;

	for (i = 0; i <= layout->ncolumns; i++)
	{
		int			column = i < layout->ncolumns ? layout->name_order[i] : -1;
		const PromLabelValue *value = column >= 0 ?
			series_value(layout, series, column) : NULL;

		if (value != NULL && !value_is_present(value))
			continue;
		/* the overflow labels before this column's (all, after the last) */
		while (p < pairs->npairs &&
			   (column < 0 ||
				compare_bytes(pairs->names[p], pairs->name_lens[p],
							  layout->names[column], layout->name_lens[column]) < 0))
		{
			labels[n].name = pairs->names[p];
			labels[n].name_len = pairs->name_lens[p];
			labels[n].value = pairs->values[p]->text;
			labels[n].value_len = pairs->values[p]->text_len;
			n++;
			p++;
		}
		if (column < 0)
			break;
		labels[n].name = layout->names[column];
		labels[n].name_len = layout->name_lens[column];
		labels[n].value = value->text;
		labels[n].value_len = value->text_len;
		n++;
	}
	return n;
}

/*
 * PromPutSeriesLabels of a series with overflow labels (pairs): its
 * columns' and its overflow labels as Label fields, merged in name order.
 */
char *
PromPutLabelsWithPairs(char *p, const PromLayout *layout, const PromSeries *series,
					   const LabelPairs *pairs)
{
	int			q = 0;
	int			i;

	for (i = 0; i <= layout->ncolumns; i++)
	{
		int			column = i < layout->ncolumns ? layout->name_order[i] : -1;
		const PromLabelValue *value = column >= 0 ?
			series_value(layout, series, column) : NULL;

		if (value != NULL && !value_is_present(value))
			continue;
		while (q < pairs->npairs &&
			   (column < 0 ||
				compare_bytes(pairs->names[q], pairs->name_lens[q],
							  layout->names[column], layout->name_lens[column]) < 0))
		{
			p = wire_put_label(p, pairs->name_parts[q], pairs->name_part_lens[q],
							   pairs->values[q]->text, pairs->values[q]->text_len);
			q++;
		}
		if (column >= 0)
			p = wire_put_label(p, layout->name_parts[column],
							   layout->name_part_lens[column],
							   value->text, value->text_len);
	}
	return p;
}
