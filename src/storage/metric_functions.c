/*-------------------------------------------------------------------------
 *
 * metric_functions.c
 *	  SQL functions that create metrics and their parts:
 *	  prom_create_metric and prom_chunk_partition.
 *
 * prom_create_metric creates a metric in the first schema of search_path,
 * in chunk storage (create.c) or in row storage (a table as remote write
 * creates one, write_tables.c), checking its arguments first.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/storage.h"
#include "tcop/utility.h"
#include "utils/array.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(prom_create_metric);
PG_FUNCTION_INFO_V1(prom_chunk_partition);

/* The labels of prom_create_metric: valid label names, once each (22023). */
static const char **
create_labels(ArrayType *array, int *nlabels)
{
	Datum	   *values;
	bool	   *nulls;
	const char **labels;
	int			i;
	int			j;

	deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &values, &nulls,
					  nlabels);
	labels = palloc(sizeof(char *) * Max(*nlabels, 1));
	for (i = 0; i < *nlabels; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("labels must not contain NULL")));
		labels[i] = TextDatumGetCString(values[i]);
		if (!PromIsValidLabelName(labels[i], strlen(labels[i])) ||
			strcmp(labels[i], "__name__") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("\"%s\" is not a valid label name", labels[i]),
					 errdetail("Label names must match [a-zA-Z_][a-zA-Z0-9_]*, and __name__ is the metric's name.")));
		for (j = 0; j < i; j++)
			if (strcmp(labels[i], labels[j]) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("label \"%s\" is given more than once", labels[i])));
	}
	return labels;
}

/* Raise 22004 for a NULL argument of prom_create_metric. */
static void
check_not_null(FunctionCallInfo fcinfo, int arg, const char *name)
{
	if (PG_ARGISNULL(arg))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", name)));
}

/*
 * prom_create_metric(metric text, labels text[], storage text, value_type
 * regtype) RETURNS regclass: create a metric in the first schema of
 * search_path, in chunk storage (its view is returned) or row storage (its
 * table), with a column for each label.
 */
Datum
prom_create_metric(PG_FUNCTION_ARGS)
{
	char	   *metric;
	const char **labels;
	int			nlabels;
	char	   *storage;
	Oid			value_type;
	bool		chunks;
	Oid			nspid;
	PromMetricEntry *entry;
	Oid			relid;

	check_not_null(fcinfo, 0, "metric");
	check_not_null(fcinfo, 1, "labels");
	check_not_null(fcinfo, 2, "storage");
	check_not_null(fcinfo, 3, "value_type");
	PreventCommandIfReadOnly("prom_create_metric()");
	PreventCommandDuringRecovery("prom_create_metric()");
	metric = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (!PromIsValidMetricName(metric, strlen(metric)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("\"%s\" is not a valid Prometheus metric name", metric),
				 errdetail("Metric names must match [a-zA-Z_:][a-zA-Z0-9_:]*.")));
	labels = create_labels(PG_GETARG_ARRAYTYPE_P(1), &nlabels);
	storage = text_to_cstring(PG_GETARG_TEXT_PP(2));
	if (strcmp(storage, "chunks") != 0 && strcmp(storage, "rows") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized storage \"%s\"", storage),
				 errhint("Storage is \"chunks\" or \"rows\".")));
	chunks = strcmp(storage, "chunks") == 0;
	value_type = PG_GETARG_OID(3);
	if (value_type != FLOAT8OID && value_type != PromHistogramTypeOid())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("metric values cannot be of type %s", format_type_be(value_type)),
				 errhint("A metric's values are double precision or prom_histogram.")));
	nspid = RangeVarGetCreationNamespace(makeRangeVar(NULL, metric, -1));
	if (isTempNamespace(nspid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a metric cannot be created in a temporary schema"),
				 errhint("Put a permanent schema first in search_path.")));

	SPI_connect();
	entry = chunks ?
		PromStorageCreateMetric(metric, nspid, labels, nlabels,
								value_type != FLOAT8OID, false, PG_INT64_MAX) :
		PromCreateRowMetric(metric, nspid, labels, nlabels,
							value_type != FLOAT8OID, false);
	relid = entry->relid;		/* the entry goes with SPI's memory */
	SPI_finish();
	PG_RETURN_OID(relid);
}

/*
 * prom_chunk_partition(metric text, t timestamptz) RETURNS regclass: the
 * partition of a chunk metric's chunks for the UTC day of t, created when
 * missing (see PromStorageChunkPartition), by the owner of its chunks.
 */
Datum
prom_chunk_partition(PG_FUNCTION_ARGS)
{
	char	   *metric = text_to_cstring(PG_GETARG_TEXT_PP(0));
	TimestampTz ts = PG_GETARG_TIMESTAMPTZ(1);
	PromStorageEntry *entry;
	Oid			relid;

	if (TIMESTAMP_NOT_FINITE(ts))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range")));
	entry = PromStorageLookup(metric);
	if (entry == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("metric \"%s\" is not in chunk storage", metric),
				 errhint("Create it with prom_create_metric().")));
	SPI_connect();
	relid = PromStorageChunkPartition(entry, PromTimestampToMs(ts));
	SPI_finish();
	PG_RETURN_OID(relid);
}
