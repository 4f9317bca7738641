/*-------------------------------------------------------------------------
 *
 * write_rows.c
 *	  Writing the samples of one metric of a remote-write request into its
 *	  registered relation.
 *
 * 1. The relation is locked and checked to still exist and to be the one
 *    its metric is registered for, as registered when the request began
 *    (another session may have dropped it or registered the metric again
 *    meanwhile: then nothing is written, and remote_write.c looks the
 *    metric up again); its time column must still be of a time type, and
 *    writing into it must not run an untrusted role's code (write_trust.c).
 * 2. A table (or partitioned table) is written as the COPY command writes
 *    it, from a stream of COPY's binary format built here: the caller's
 *    INSERT privilege checked as COPY checks it, then rows in batches, with
 *    triggers, constraints and partition routing.  Each series' label
 *    fields are built once, then copied into each of its rows.  A trigger
 *    of the relation may call prom_remote_write again: the stream COPY
 *    reads is the call's own, and the outer call's is put back when the
 *    inner one ends, by error too.
 *    Native histograms go to a prom_histogram value column in the type's
 *    binary form (its send function's output, which COPY reads back with
 *    its receive function).
 * 3. What COPY cannot write (views, foreign tables, tables under row-level
 *    security, whose WITH CHECK policies COPY does not apply, value columns
 *    other than float8 or, for histograms, prom_histogram, labels of types whose binary input is not their
 *    text, labels in a session whose client_encoding is not the database's,
 *    from which binary input would convert them) gets one INSERT ... SELECT FROM ROWS FROM (unnest($1),
 *    unnest($2), ...) through SPI instead, the times, values and label
 *    values bound as arrays (a series' label text once, shared by its rows).
 *
 * Times become the time column's type (ms since the Unix epoch for int8),
 * 22008 outside PostgreSQL's range; values keep their bits (a stale marker
 * stays one) and are assigned to the value column's type; native
 * histograms go to a prom_histogram value column, float samples to any
 * other (the other kind refuses the metric, 22023), but for staleness
 * markers: Prometheus ends a histogram series with a float one (it logs the
 * marker, and so remote-writes it, before its TSDB stores it as a
 * histogram whose sum is the stale NaN), which a prom_histogram column
 * takes as that histogram, as the TSDB does; label values are
 * assigned to their columns' types (enum labels must be labels of the enum).
 * A label is written to the column the catalog maps it to; the labels of a
 * series that have no column, where the relation has a column of overflow
 * labels, are written to it as one jsonb object.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/sysattr.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/copy.h"
#include "common/int.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_relation.h"
#include "port/pg_bswap.h"
#include "promread.h"
#include "protocol/protocol.h"
#include "write_internal.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/timestamp.h"

/*
 * Microseconds since the PostgreSQL epoch of a sample's (or an exemplar's)
 * time in ms since the Unix epoch; 22008 outside PostgreSQL's range of
 * timestamps.
 */
int64
PromWriteTimestamp(int64 ms, const char *metric)
{
	int64		us;

	if (pg_sub_s64_overflow(ms, PROM_EPOCH_DIFF_MS, &us) ||
		pg_mul_s64_overflow(us, 1000, &us) || !IS_VALID_TIMESTAMP(us))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("a sample of metric \"%s\" has a time out of range: %lld ms",
						metric, (long long) ms)));
	return us;
}

/* The base type of a relation's column, which must exist. */
static Oid
column_base_type(Oid relid, const char *column, const char *metric)
{
	AttrNumber	attnum = get_attnum(relid, column);

	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("the relation of metric \"%s\" has no column \"%s\"",
						metric, column)));
	return getBaseType(get_atttype(relid, attnum));
}

/* The column that holds a label, or NULL: none. */
static const char *
label_column(const PromMetricEntry *entry, const char *label)
{
	int			i = PromCatalogLabelIndex(entry, label);

	return i >= 0 ? entry->label_columns[i] : NULL;
}

/*
 * Add a label to the jsonb text of a series' overflow labels being built in
 * out (empty before the first).
 */
static void
append_overflow_label(StringInfo out, const PromWriteLabel *label,
					  StringInfo scratch)
{
	appendStringInfoChar(out, out->len == 0 ? '{' : ',');
	escape_json(out, label->name);
	appendStringInfoChar(out, ':');
	resetStringInfo(scratch);
	appendBinaryStringInfo(scratch, label->value, label->value_len);
	escape_json(out, scratch->data);
}

/* The time (ms) of row s of a series (of PromWriteSeriesRows). */
int64
PromWriteSeriesTime(const PromWriteSeries *series, int s, bool histograms)
{
	int			nhistograms = histograms ? series->nhistograms : 0;

	return s < nhistograms ? series->histograms[s].timestamp :
		series->samples[s - nhistograms]->timestamp;
}

/* The value of float sample s of a series, its bits as sent. */
double
PromWriteSeriesValue(const PromWriteSeries *series, int s)
{
	return series->samples[s]->value;
}

/* Is a float sample Prometheus's staleness marker (by its bits)? */
static inline bool
is_stale_marker(double value)
{
	union
	{
		double		value;
		uint64		bits;
	}			u;

	u.value = value;
	return u.bits == PROM_STALE_NAN_BITS;
}

/*
 * Is every float sample of a group's series a staleness marker (true for
 * none), so that a prom_histogram column takes them as stale histograms?
 */
bool
PromWriteGroupSamplesStale(const PromWriteGroup *group)
{
	int			i;
	int			s;

	for (i = 0; i < group->nseries; i++)
		for (s = 0; s < group->series[i]->nsamples; s++)
			if (!is_stale_marker(group->series[i]->samples[s]->value))
				return false;
	return true;
}

/*
 * The staleness marker of a histogram series as Prometheus's TSDB stores
 * it: an integer histogram with no buckets whose sum is the stale NaN.
 */
static PromHistogram *
stale_histogram(void)
{
	Size		size = PromHistogramSize(0, 0, 0, 0, 0);
	PromHistogram *h = palloc0(size);
	union
	{
		uint64		bits;
		double		value;
	}			u;

	SET_VARSIZE(h, size);
	h->kind = PROM_HISTOGRAM_INTEGER;
	u.bits = PROM_STALE_NAN_BITS;
	h->sum = u.value;
	return h;
}

/* The columns of one INSERT: $1 times, $2 values, then label arrays. */
typedef struct InsertColumns
{
	bool		histograms;		/* values are the series' histograms */
	int			nparams;
	int		   *param_of_label; /* per label of the group; -1 without column */
	int			overflow_param; /* the overflow labels'; -1 without column */
	Datum	  **values;			/* per parameter, one per row */
	bool	  **nulls;
	int64		nrows;
} InsertColumns;

/*
 * Lay out a group's samples as columns: a time and a value per row, and per
 * label with a column, its value (one text per series, shared by the
 * series' rows) or NULL.
 */
static void
fill_columns(const PromWriteGroup *group, const PromMetricEntry *entry,
			 Oid time_type, InsertColumns *cols)
{
	int64		row = 0;
	StringInfoData overflow;
	StringInfoData scratch;
	PromHistogram *stale;
	int			i;
	int			j;

	initStringInfo(&overflow);
	initStringInfo(&scratch);
	cols->param_of_label = palloc(sizeof(int) * Max(group->nlabels, 1));
	cols->nparams = 2;
	for (i = 0; i < group->nlabels; i++)
		cols->param_of_label[i] = PromCatalogLabelIndex(entry, group->labels[i]) >= 0 ?
			cols->nparams++ : -1;
	cols->overflow_param = entry->overflow_column != NULL ? cols->nparams++ : -1;
	cols->values = palloc(sizeof(Datum *) * cols->nparams);
	cols->nulls = palloc(sizeof(bool *) * cols->nparams);
	for (j = 0; j < cols->nparams; j++)
	{
		cols->values[j] = palloc_extended(sizeof(Datum) * cols->nrows, MCXT_ALLOC_HUGE);
		cols->nulls[j] = palloc_extended(sizeof(bool) * cols->nrows,
										 MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	}

	stale = cols->histograms ? stale_histogram() : NULL;
	for (i = 0; i < group->nseries; i++)
	{
		const PromWriteSeries *series = group->series[i];
		int			nrows = PromWriteSeriesRows(series, cols->histograms);
		int			nhistograms = cols->histograms ? series->nhistograms : 0;
		int64		first = row;
		int			l = 0;
		int			s;

		CHECK_FOR_INTERRUPTS();
		for (s = 0; s < nrows; s++, row++)
		{
			int64		ms = PromWriteSeriesTime(series, s, cols->histograms);

			cols->values[0][row] =
				Int64GetDatum(time_type == INT8OID ? ms : PromWriteTimestamp(ms, entry->metric));
			if (s < nhistograms)
				cols->values[1][row] = PointerGetDatum(series->histograms[s].value);
			else if (cols->histograms)
				cols->values[1][row] = PointerGetDatum(stale);
			else
				cols->values[1][row] = Float8GetDatum(series->samples[s]->value);
		}
		/* the series' labels and the group's are both sorted by name */
		resetStringInfo(&overflow);
		for (j = 0; j < group->nlabels; j++)
		{
			int			param = cols->param_of_label[j];
			const PromWriteLabel *label = NULL;

			if (l < series->nlabels &&
				strcmp(series->labels[l].name, group->labels[j]) == 0)
				label = &series->labels[l++];
			if (param < 0 && label != NULL && cols->overflow_param >= 0)
				append_overflow_label(&overflow, label, &scratch);
			if (param < 0)
				continue;
			if (label == NULL)
			{
				memset(cols->nulls[param] + first, true, nrows);
				continue;
			}
			{
				Datum		text = PointerGetDatum(cstring_to_text_with_len(label->value,
																			label->value_len));

				for (s = 0; s < nrows; s++)
					cols->values[param][first + s] = text;
			}
		}
		if (cols->overflow_param >= 0)
		{
			int			param = cols->overflow_param;
			Datum		text = (Datum) 0;

			if (overflow.len > 0)
			{
				appendStringInfoChar(&overflow, '}');
				text = PointerGetDatum(cstring_to_text_with_len(overflow.data,
																overflow.len));
			}
			for (s = 0; s < nrows; s++)
			{
				cols->values[param][first + s] = text;
				cols->nulls[param][first + s] = overflow.len == 0;
			}
		}
	}
}

/* Bind an array of a column's Datums of a type as parameter $k+1. */
static void
bind_array(const InsertColumns *cols, int k, Oid element_type, Oid *types,
		   Datum *args)
{
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int			dims[1] = {(int) cols->nrows};
	int			lbs[1] = {1};

	get_typlenbyvalalign(element_type, &typlen, &typbyval, &typalign);
	types[k] = get_array_type(element_type);
	args[k] = PointerGetDatum(construct_md_array(cols->values[k], cols->nulls[k],
												 1, dims, lbs, element_type,
												 typlen, typbyval, typalign));
}

/*
 * The INSERT of a group's columns into the metric's relation: INSERT INTO
 * rel (time, value, labels...) SELECT u.t, u.v, u.l3, ... FROM ROWS FROM
 * (unnest($1), unnest($2), ...) AS u(t, v, l3, ...), enum labels cast.
 */
static char *
insert_statement(const PromWriteGroup *group, const PromMetricEntry *entry,
				 const InsertColumns *cols)
{
	StringInfoData insert;
	StringInfoData select;
	StringInfoData aliases;
	int			i;

	initStringInfo(&insert);
	initStringInfo(&select);
	initStringInfo(&aliases);
	appendStringInfo(&insert, "INSERT INTO %s (%s, %s",
					 PromQuotedRelationName(entry->relid),
					 quote_identifier(entry->time_column),
					 quote_identifier(entry->value_column));
	appendStringInfoString(&select, ") SELECT u.t, u.v");
	appendStringInfoString(&aliases, ") AS u(t, v");
	for (i = 0; i < group->nlabels; i++)
	{
		int			param = cols->param_of_label[i];
		const char *column;
		Oid			type;

		if (param < 0)
			continue;
		column = label_column(entry, group->labels[i]);
		type = column_base_type(entry->relid, column, entry->metric);
		appendStringInfo(&insert, ", %s", quote_identifier(column));
		if (type_is_enum(type))
			appendStringInfo(&select, ", CAST(u.l%d AS %s)", param,
							 format_type_be_qualified(type));
		else
			appendStringInfo(&select, ", u.l%d", param);
		appendStringInfo(&aliases, ", l%d", param);
	}
	if (cols->overflow_param >= 0)
	{
		appendStringInfo(&insert, ", %s", quote_identifier(entry->overflow_column));
		appendStringInfo(&select, ", CAST(u.l%d AS pg_catalog.jsonb)",
						 cols->overflow_param);
		appendStringInfo(&aliases, ", l%d", cols->overflow_param);
	}
	appendStringInfo(&insert, "%s FROM ROWS FROM (", select.data);
	for (i = 0; i < cols->nparams; i++)
		appendStringInfo(&insert, "%spg_catalog.unnest($%d)", i > 0 ? ", " : "", i + 1);
	appendStringInfo(&insert, "%s)", aliases.data);
	return insert.data;
}

/* A COPY stream being read: its bytes, and how many COPY has read. */
typedef struct CopySource
{
	const StringInfoData *stream;
	int			read;
} CopySource;

/*
 * The stream of the COPY in progress.  COPY's data source callback takes no
 * argument, so it reads this; a trigger fired by that COPY may call
 * prom_remote_write again, whose own COPY replaces it for its duration and
 * puts the outer one back when it ends, however it ends (copy_group).
 */
static CopySource *copy_current;

/* COPY's data source callback: the next bytes of copy_current's stream. */
static int
copy_source(void *outbuf, int minread, int maxread)
{
	int			n = Min(maxread, copy_current->stream->len - copy_current->read);

	memcpy(outbuf, copy_current->stream->data + copy_current->read, n);
	copy_current->read += n;
	return n;
}

/*
 * Can the group be written by COPY rather than by INSERT?  When the
 * relation is a table (COPY writes rows in batches, which INSERT does not),
 * row-level security does not apply to the caller (COPY FROM cannot check
 * its policies), the value column is float8, every label column one
 * whose binary input reads the label's text (text, varchar, name, enum) and
 * the column of overflow labels, if any, jsonb.  That input converts text
 * from the session's client_encoding, so labels go through COPY only when
 * that is the database's encoding (UTF-8, as the request's labels):
 * otherwise COPY would store them converted, as if Prometheus had sent them
 * in the client's encoding.
 */
static bool
copy_applies(const PromWriteGroup *group, const PromMetricEntry *entry, Relation rel,
			 bool histograms)
{
	char		relkind = rel->rd_rel->relkind;
	int			i;

	if ((relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE) ||
		check_enable_rls(entry->relid, InvalidOid, false) == RLS_ENABLED ||
		get_atttype(entry->relid, get_attnum(entry->relid, entry->value_column)) !=
		(histograms ? PromHistogramTypeOid() : FLOAT8OID))
		return false;
	if (entry->overflow_column != NULL &&
		get_atttype(entry->relid, get_attnum(entry->relid, entry->overflow_column)) != JSONBOID)
		return false;
	for (i = 0; i < group->nlabels; i++)
	{
		const char *column = label_column(entry, group->labels[i]);
		AttrNumber	attnum;
		Oid			type;

		if (column == NULL)
			continue;
		attnum = get_attnum(entry->relid, column);
		if (attnum == InvalidAttrNumber || pg_get_client_encoding() != GetDatabaseEncoding())
			return false;
		type = get_atttype(entry->relid, attnum);
		if (type != TEXTOID && type != VARCHAROID && type != NAMEOID && !type_is_enum(type))
			return false;
	}
	return true;
}

/*
 * Prepare to write the values of a metric's rows in COPY's binary format:
 * float samples, or histograms (through the type's send function, the
 * staleness markers among the float samples as stale histograms).
 */
void
PromCopyValuesInit(PromCopyValues *values, bool histograms)
{
	values->histograms = histograms;
	values->stale = NULL;
	if (histograms)
	{
		Oid			sendfn;
		bool		isvarlena;

		getTypeBinaryOutputInfo(PromHistogramTypeOid(), &sendfn, &isvarlena);
		fmgr_info(sendfn, &values->send);
		values->stale = stale_histogram();
	}
}

/*
 * Append the value field of row s of a series (of PromWriteSeriesRows) in
 * COPY's binary format: a float's bits as they are, a histogram's send
 * form.
 */
void
PromCopyAppendValue(StringInfo out, PromCopyValues *values,
					const PromWriteSeries *series, int s)
{
	int			nhistograms = values->histograms ? series->nhistograms : 0;

	if (values->histograms)
	{
		PromHistogram *h = s < nhistograms ? series->histograms[s].value : values->stale;
		bytea	   *value = SendFunctionCall(&values->send, PointerGetDatum(h));

		PromCopyAppendField(out, VARDATA(value), VARSIZE(value) - VARHDRSZ);
		pfree(value);
	}
	else
	{
		uint64		bits;

		memcpy(&bits, &series->samples[s]->value, sizeof(bits));
		bits = pg_hton64(bits);
		PromCopyAppendField(out, &bits, 8);
	}
}

/*
 * The group's rows in COPY's binary format: time, value, then each label
 * that has a column (has_column), in the group's order of labels, then,
 * with overflow, the jsonb of the labels without a column (or NULL).
 */
static void
copy_rows(const PromWriteGroup *group, const PromMetricEntry *entry, Oid time_type,
		  bool histograms, const bool *has_column, int ncolumns, bool overflow,
		  StringInfo out)
{
	uint16		be_ncolumns = pg_hton16((uint16) ncolumns);
	StringInfoData labels;
	StringInfoData overflow_labels;
	StringInfoData scratch;
	PromCopyValues values;
	int			i;

	PromCopyValuesInit(&values, histograms);
	initStringInfo(&labels);
	initStringInfo(&overflow_labels);
	initStringInfo(&scratch);
	PromCopyAppendHeader(out);
	for (i = 0; i < group->nseries; i++)
	{
		const PromWriteSeries *series = group->series[i];
		int			l = 0;
		int			j;
		int			s;

		CHECK_FOR_INTERRUPTS();
		/* the series' label fields, once for all its rows */
		resetStringInfo(&labels);
		resetStringInfo(&overflow_labels);
		for (j = 0; j < group->nlabels; j++)
		{
			const PromWriteLabel *label = NULL;
			uint32		null_len = pg_hton32((uint32) -1);

			if (l < series->nlabels && strcmp(series->labels[l].name, group->labels[j]) == 0)
				label = &series->labels[l++];
			if (!has_column[j] && label != NULL && overflow)
				append_overflow_label(&overflow_labels, label, &scratch);
			if (!has_column[j])
				continue;
			if (label == NULL)
				appendBinaryStringInfo(&labels, (const char *) &null_len, 4);
			else
				PromCopyAppendField(&labels, label->value, label->value_len);
		}
		if (overflow)
		{
			uint32		null_len = pg_hton32((uint32) -1);

			if (overflow_labels.len == 0)
				appendBinaryStringInfo(&labels, (const char *) &null_len, 4);
			else
			{
				/* jsonb's binary input: a version byte, then the text */
				uint32		be_len = pg_hton32((uint32) overflow_labels.len + 2);

				appendBinaryStringInfo(&labels, (const char *) &be_len, 4);
				appendStringInfoChar(&labels, 1);
				appendBinaryStringInfo(&labels, overflow_labels.data,
									   overflow_labels.len);
				appendStringInfoChar(&labels, '}');
			}
		}
		for (s = 0; s < PromWriteSeriesRows(series, histograms); s++)
		{
			int64		ms = PromWriteSeriesTime(series, s, histograms);
			int64		time = time_type == INT8OID ? ms : PromWriteTimestamp(ms, entry->metric);
			uint64		be_time = pg_hton64((uint64) time);

			enlargeStringInfo(out, 2 + 24 + labels.len);
			appendBinaryStringInfoNT(out, (const char *) &be_ncolumns, 2);
			PromCopyAppendField(out, &be_time, 8);
			PromCopyAppendValue(out, &values, series, s);
			appendBinaryStringInfoNT(out, labels.data, labels.len);
		}
	}
	PromCopyAppendTrailer(out);
}

/*
 * A parse state whose one range table entry is the relation, the caller's
 * INSERT privilege on its columns checked as COPY and INSERT check it
 * (42501 otherwise).
 */
static ParseState *
make_insert_state(Relation rel, List *attnames)
{
	ParseState *pstate = make_parsestate(NULL);
	ParseNamespaceItem *nsitem;
	ListCell   *lc;

	nsitem = addRangeTableEntryForRelation(pstate, rel, RowExclusiveLock, NULL,
										   false, false);
	PromPermissionsOf(nsitem)->requiredPerms = ACL_INSERT;
	foreach(lc, attnames)
		PromPermissionsOf(nsitem)->insertedCols =
			bms_add_member(PromPermissionsOf(nsitem)->insertedCols,
						   get_attnum(RelationGetRelid(rel), strVal(lfirst(lc))) -
						   FirstLowInvalidHeapAttributeNumber);
	PromCheckPermissions(pstate);
	return pstate;
}

/*
 * Write a stream in COPY's binary format (PromCopyAppendHeader, rows,
 * PromCopyAppendTrailer) of the columns attnames into a table, locked, as
 * the COPY command would: INSERT privilege on its columns checked first,
 * then rows inserted in batches, with triggers, constraints, indexes and
 * partition routing.
 */
void
PromWriteCopy(Relation rel, List *attnames, const StringInfoData *stream)
{
	ParseState *pstate = make_insert_state(rel, attnames);
	CopySource	source;
	CopySource *outer;
	CopyFromState cstate;


	source.stream = stream;
	source.read = 0;
	outer = copy_current;
	copy_current = &source;
	PG_TRY();
	{
		cstate = BeginCopyFrom(pstate, rel, NULL, NULL, false, copy_source, attnames,
							   list_make1(makeDefElem("format", (Node *) makeString("binary"), -1)));
		CopyFrom(cstate);
		EndCopyFrom(cstate);
	}
	PG_FINALLY();
	{
		copy_current = outer;
	}
	PG_END_TRY();
	free_parsestate(pstate);
	CommandCounterIncrement();
}

/*
 * Check the caller's INSERT privilege on a relation's columns (42501
 * otherwise).
 */
void
PromCheckInsertPrivileges(Relation rel, List *attnames)
{
	free_parsestate(make_insert_state(rel, attnames));
}

/* Write the group with COPY FROM (PromWriteCopy). */
static void
copy_group(const PromWriteGroup *group, const PromMetricEntry *entry, Relation rel,
		   Oid time_type, bool histograms)
{
	List	   *attnames;
	bool	   *has_column = palloc(sizeof(bool) * Max(group->nlabels, 1));
	StringInfoData stream;
	int			i;

	attnames = list_make2(makeString(entry->time_column), makeString(entry->value_column));
	for (i = 0; i < group->nlabels; i++)
	{
		const char *column = label_column(entry, group->labels[i]);

		has_column[i] = column != NULL;
		if (has_column[i])
			attnames = lappend(attnames, makeString((char *) column));
	}
	if (entry->overflow_column != NULL)
		attnames = lappend(attnames, makeString(entry->overflow_column));

	initStringInfo(&stream);
	copy_rows(group, entry, time_type, histograms, has_column, list_length(attnames),
			  entry->overflow_column != NULL, &stream);
	PromWriteCopy(rel, attnames, &stream);
}

/*
 * Insert the group with INSERT ... SELECT FROM ROWS FROM (unnest($1), ...)
 * through SPI: for what COPY cannot write (views, foreign tables, tables
 * under row-level security, values or labels of other types).
 */
static void
insert_group(const PromWriteGroup *group, const PromMetricEntry *entry, Oid time_type,
			 bool histograms, int64 nrows)
{
	InsertColumns cols = {0};
	Oid		   *types;
	Datum	   *args;
	int			i;

	cols.nrows = nrows;
	cols.histograms = histograms;
	fill_columns(group, entry, time_type, &cols);
	types = palloc(sizeof(Oid) * cols.nparams);
	args = palloc(sizeof(Datum) * cols.nparams);
	bind_array(&cols, 0, time_type, types, args);
	bind_array(&cols, 1, histograms ? PromHistogramTypeOid() : FLOAT8OID, types, args);
	for (i = 2; i < cols.nparams; i++)
		bind_array(&cols, i, TEXTOID, types, args);
	if (SPI_execute_with_args(insert_statement(group, entry, &cols), cols.nparams,
							  types, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "promread could not insert the samples of metric \"%s\"",
			 entry->metric);
}

/*
 * Is a registration, read before its relation was locked, still the one the
 * catalog holds: the same relation, time, value and label columns, labels
 * and overflow column?
 */
bool
PromWriteSameRegistration(const PromMetricEntry *before, const PromMetricEntry *now)
{
	int			i;

	if (now == NULL || now->relid != before->relid || now->nlabels != before->nlabels ||
		strcmp(now->time_column, before->time_column) != 0 ||
		strcmp(now->value_column, before->value_column) != 0 ||
		(now->overflow_column == NULL) != (before->overflow_column == NULL) ||
		(now->overflow_column != NULL &&
		 strcmp(now->overflow_column, before->overflow_column) != 0))
		return false;
	for (i = 0; i < now->nlabels; i++)
		if (strcmp(now->label_columns[i], before->label_columns[i]) != 0 ||
			strcmp(now->label_names[i], before->label_names[i]) != 0)
			return false;
	return true;
}

/*
 * Refuse (22023) a group whose samples its metric's value column cannot
 * take: histograms without a prom_histogram column, float samples other
 * than staleness markers with one; and (54000) more rows than a write
 * takes.  Returns the rows the group gives.
 */
int64
PromWriteCheckValueKind(const PromWriteGroup *group, const char *metric,
						const char *value_column, bool histograms)
{
	int64		nrows;

	if (PromWriteGroupValues(group, true) > 0 && !histograms)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("metric \"%s\" takes float samples, not native histograms",
						metric),
				 errdetail("Its value column \"%s\" is not of type prom_histogram.",
						   value_column)));
	if (PromWriteGroupValues(group, false) > 0 && histograms &&
		!PromWriteGroupSamplesStale(group))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("metric \"%s\" takes native histograms, not float samples",
						metric),
				 errdetail("Its value column \"%s\" is of type prom_histogram.",
						   value_column)));
	nrows = PromWriteGroupValues(group, false) +
		(histograms ? PromWriteGroupValues(group, true) : 0);
	if (nrows > PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("remote write request has too many samples of metric \"%s\"",
						metric)));
	return nrows;
}

/*
 * Write the samples, or the histograms, of a group's series into its
 * registered relation, locked first, by COPY where it applies.  Returns false, having written
 * nothing, when the relation was dropped or the metric registered again
 * while the lock was waited for: the caller looks the metric up again.
 */
bool
PromWriteGroupRows(const PromWriteGroup *group, const PromMetricEntry *entry)
{
	Relation	rel;
	Oid			time_type;
	bool		histograms;
	int64		nrows;

	rel = try_relation_open(entry->relid, RowExclusiveLock);
	if (rel == NULL)
		return false;
	if (!PromWriteSameRegistration(entry, PromCatalogFind(entry->metric)))
	{
		relation_close(rel, RowExclusiveLock);
		return false;
	}
	PromCheckWriteTrusted(rel, entry);
	time_type = column_base_type(entry->relid, entry->time_column, entry->metric);
	if (time_type != TIMESTAMPTZOID && time_type != TIMESTAMPOID && time_type != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("time column \"%s\" of metric \"%s\" has type %s",
						entry->time_column, entry->metric, format_type_be(time_type)),
				 errhint("Register the metric again.")));
	/* a value column dropped since the registration: 42703 */
	histograms = column_base_type(entry->relid, entry->value_column, entry->metric) ==
		PromHistogramTypeOid();
	nrows = PromWriteCheckValueKind(group, entry->metric, entry->value_column,
									histograms);
	if (nrows > 0)
	{
		if (copy_applies(group, entry, rel, histograms))
			copy_group(group, entry, rel, time_type, histograms);
		else
			insert_group(group, entry, time_type, histograms, nrows);
	}
	relation_close(rel, NoLock);
	return true;
}
