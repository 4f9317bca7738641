/*-------------------------------------------------------------------------
 *
 * register_columns.c
 *	  The columns prom_register registers: the time column, the value
 *	  column and the label columns of a relation, as named or inferred.
 *
 * Unnamed, the time column is the one column of type timestamptz or
 * timestamp, the value column the one of type double precision or
 * prom_histogram (a metric of native histograms), and the labels every
 * column of type text, varchar, name or an enum (domains looked through);
 * two candidates are an error that asks for the name, so a relation with a
 * double precision and a prom_histogram column must name its value column,
 * as one with two double precision columns must.  Named, a time column may
 * also be bigint (milliseconds since the Unix epoch) and a value column
 * real, numeric or an integer type.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "promread.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/typcache.h"


/* A column of a relation being registered. */
typedef struct RelColumn
{
	char	   *name;
	Oid			basetype;		/* type with domains looked through */
} RelColumn;

/* The columns of a relation, with their base types. */
static List *
relation_columns(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *columns = NIL;
	int			i;

	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		RelColumn  *column;

		if (att->attisdropped)
			continue;
		column = palloc(sizeof(RelColumn));
		column->name = pstrdup(NameStr(att->attname));
		column->basetype = getBaseType(att->atttypid);
		columns = lappend(columns, column);
	}
	return columns;
}

/* Find a column by name, or raise an error naming the argument. */
static RelColumn *
find_column(List *columns, const char *name, Relation rel)
{
	ListCell   *lc;

	foreach(lc, columns)
	{
		RelColumn  *column = lfirst(lc);

		if (strcmp(column->name, name) == 0)
			return column;
	}
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg("column \"%s\" of relation \"%s\" does not exist",
					name, RelationGetRelationName(rel))));
	return NULL;
}

/* Is the type one whose columns become labels without being named? */
static bool
is_label_type(Oid type)
{
	return type == TEXTOID || type == VARCHAROID || type == NAMEOID ||
		type_is_enum(type);
}

/*
 * Is the type allowed for the time column; inferred only if timestamp?
 * (histogram_type: see is_value_type)
 */
static bool
is_time_type(Oid type, bool named, Oid histogram_type)
{
	return type == TIMESTAMPTZOID || type == TIMESTAMPOID ||
		(named && type == INT8OID);
}

/*
 * Is the type allowed for the value column; inferred only if float8 or
 * prom_histogram?  histogram_type is prom_histogram's OID, InvalidOid when
 * the extension's objects have no such type yet.
 */
static bool
is_value_type(Oid type, bool named, Oid histogram_type)
{
	return type == FLOAT8OID ||
		(OidIsValid(histogram_type) && type == histogram_type) ||
		(named && (type == FLOAT4OID || type == NUMERICOID ||
				   type == INT2OID || type == INT4OID || type == INT8OID));
}

/*
 * Choose the time or value column: the named one, which must have an
 * allowed type, or the one column of an inferable type.
 */
static RelColumn *
choose_column(Relation rel, List *columns, Name named, const char *role,
			  const char *argument, const char *types, Oid histogram_type,
			  bool (*allowed) (Oid, bool, Oid))
{
	RelColumn  *found = NULL;
	int			ncandidates = 0;
	ListCell   *lc;
	StringInfoData candidates;

	if (named != NULL)
	{
		found = find_column(columns, NameStr(*named), rel);
		if (!allowed(found->basetype, true, histogram_type))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of relation \"%s\" cannot be the %s column",
							found->name, RelationGetRelationName(rel), role),
					 errdetail("Column \"%s\" has type %s.", found->name,
							   format_type_be(found->basetype)),
					 errhint("The %s column must be of type %s.", role, types)));
		return found;
	}

	initStringInfo(&candidates);
	foreach(lc, columns)
	{
		RelColumn  *column = lfirst(lc);

		if (!allowed(column->basetype, false, histogram_type))
			continue;
		appendStringInfo(&candidates, "%s\"%s\"",
						 found != NULL ? ", " : "", column->name);
		ncandidates++;
		found = column;
	}
	if (ncandidates > 1)
		ereport(ERROR,
				(errcode(ERRCODE_AMBIGUOUS_COLUMN),
				 errmsg("relation \"%s\" has more than one candidate %s column",
						RelationGetRelationName(rel), role),
				 errdetail("Candidates: %s.", candidates.data),
				 errhint("Pass %s to say which column holds the %s.",
						 argument, role)));
	if (found == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("relation \"%s\" has no %s column",
						RelationGetRelationName(rel), role),
				 errhint("Pass %s, naming a column of type %s.", argument,
						 types)));
	return found;
}

/* Check that a column name can be a Prometheus label name. */
static void
check_label_name(Relation rel, const char *name, bool named)
{
	int			len = strlen(name);

	if (!PromIsValidLabelName(name, len))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("column \"%s\" of relation \"%s\" is not a valid Prometheus label name",
						name, RelationGetRelationName(rel)),
				 errdetail("Label names must match [a-zA-Z_][a-zA-Z0-9_]*."),
				 named ? 0 :
				 errhint("Pass label_columns without this column, or register a view that renames it.")));
	if (len >= 2 && name[0] == '_' && name[1] == '_')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("column \"%s\" of relation \"%s\" is not a valid Prometheus label name",
						name, RelationGetRelationName(rel)),
				 errdetail("Label names starting with \"__\" are reserved for Prometheus."),
				 named ? 0 :
				 errhint("Pass label_columns without this column, or register a view that renames it.")));
}

/* The label columns: those named, or all columns of a label type. */
static List *
choose_labels(Relation rel, List *columns, ArrayType *named,
			  RelColumn *time_column, RelColumn *value_column)
{
	List	   *labels = NIL;
	ListCell   *lc;

	if (named != NULL)
	{
		Datum	   *names;
		bool	   *nulls;
		int			n;
		int			i;

		deconstruct_array(named, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR,
						  &names, &nulls, &n);
		for (i = 0; i < n; i++)
		{
			RelColumn  *column;

			if (nulls[i])
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("label_columns must not contain NULL")));
			column = find_column(columns, NameStr(*DatumGetName(names[i])), rel);
			if (column == time_column || column == value_column)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("column \"%s\" cannot be both a label and the %s column",
								column->name,
								column == time_column ? "time" : "value")));
			if (list_member_ptr(labels, column))
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("column \"%s\" appears more than once in label_columns",
								column->name)));
			check_label_name(rel, column->name, true);
			labels = lappend(labels, column);
		}
		return labels;
	}

	foreach(lc, columns)
	{
		RelColumn  *column = lfirst(lc);

		if (column == time_column || column == value_column ||
			!is_label_type(column->basetype))
			continue;
		check_label_name(rel, column->name, false);
		labels = lappend(labels, column);
	}
	return labels;
}

/*
 * Choose the time, value and label columns that prom_register registers for
 * a relation, from the names given (NULL to infer them); histogram_type is
 * prom_histogram's OID (see is_value_type).
 */
void
PromChooseRegisteredColumns(Relation rel, Name time_name, Name value_name,
							ArrayType *label_names, Oid histogram_type,
							PromRegisteredColumns *chosen)
{
	List	   *columns = relation_columns(rel);
	RelColumn  *time_column;
	RelColumn  *value_column;
	List	   *labels;
	ListCell   *lc;

	time_column = choose_column(rel, columns, time_name,
								"time", "time_column",
								"timestamptz, timestamp or bigint (milliseconds since the Unix epoch)",
								histogram_type, is_time_type);
	value_column = choose_column(rel, columns, value_name,
								 "value", "value_column",
								 "double precision, prom_histogram, real, numeric, smallint, integer or bigint",
								 histogram_type, is_value_type);
	if (time_column == value_column)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("column \"%s\" cannot be both the time and the value column",
						time_column->name)));
	labels = choose_labels(rel, columns, label_names, time_column, value_column);

	chosen->time_column = time_column->name;
	chosen->value_column = value_column->name;
	chosen->labels = palloc(sizeof(char *) * Max(list_length(labels), 1));
	chosen->nlabels = 0;
	foreach(lc, labels)
		chosen->labels[chosen->nlabels++] = ((RelColumn *) lfirst(lc))->name;
}
