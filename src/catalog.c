/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  The metric catalog: prom_register, prom_unregister and the lookup of
 *	  the metrics a query selects.
 *
 * The catalog is the extension's table prom_metric_catalog (metric, relation,
 * time_column, value_column, label_columns, and the label each column holds:
 * label_names; overflow_column, a jsonb column of the labels of a table
 * remote write made that have no column of their own).  Only its owner may write it
 * with SQL; prom_register and prom_unregister check that the caller owns the
 * registered relation and then write the table directly, as PostgreSQL's own
 * catalog code does.  prom_exemplar_catalog (metric, relation) names the
 * exemplar table remote write created for a metric it created
 * (write_exemplars.c); registering the metric again or unregistering it
 * forgets that table, and the tables of a metric in chunk storage
 * (prom_storage_catalog, storage/storage_catalog.c).  Readers look entries up here in C as well, so a role
 * that may only read the metric relations (PostgREST's anonymous role, say)
 * needs no grant on the catalog: the relations themselves are read later,
 * through SPI, with the caller's privileges.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/tuptable.h"
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
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#define CATALOG_TABLE		"prom_metric_catalog"
#define CATALOG_INDEX		"prom_metric_catalog_pkey"

/* Columns of the catalog table. */
enum
{
	Anum_metric = 1,
	Anum_relation,
	Anum_time_column,
	Anum_value_column,
	Anum_label_columns,
	Anum_created_by_write,
	Anum_label_names,
	Anum_overflow_column,
	Natts_catalog = Anum_overflow_column
};

#define EXEMPLAR_TABLE		"prom_exemplar_catalog"
#define EXEMPLAR_INDEX		"prom_exemplar_catalog_pkey"

/* The storage catalog (storage/storage_catalog.c), keyed by metric too. */
#define STORAGE_TABLE		"prom_storage_catalog"
#define STORAGE_INDEX		"prom_storage_catalog_pkey"

/* Columns of the exemplar catalog: a metric and its exemplar table. */
enum
{
	Anum_exemplar_metric = 1,
	Anum_exemplar_relation,
	Natts_exemplar = Anum_exemplar_relation
};

PG_FUNCTION_INFO_V1(prom_register);
PG_FUNCTION_INFO_V1(prom_unregister);

/*
 * The OID of a type of the extension's namespace, such as prom_histogram;
 * InvalidOid when there is none (the extension's objects older than the
 * library, before ALTER EXTENSION UPDATE).
 */
Oid
PromExtensionTypeOid(const char *name)
{
	return GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum(name),
						   ObjectIdGetDatum(PromExtensionNamespace()));
}

/*
 * The extension's namespace while it is known, and its catalog table:
 * forgotten when the table's relcache entry is invalidated (DROP EXTENSION
 * drops it; so does the rollback of the CREATE EXTENSION that made it).
 */
static Oid	known_namespace = InvalidOid;
static Oid	known_catalog = InvalidOid;

/* Forget the known namespace when its catalog table may have changed. */
static void
forget_namespace(Datum arg, Oid relid)
{
	if (!OidIsValid(relid) || relid == known_catalog)
		known_namespace = known_catalog = InvalidOid;
}

/*
 * Namespace of the promread extension: pg_extension has no syscache, so it
 * is looked up once, while the extension stays.
 */
Oid
PromExtensionNamespace(void)
{
	static bool callback_registered = false;
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			nspid = InvalidOid;

	if (OidIsValid(known_namespace))
		return known_namespace;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("promread"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		nspid = ((Form_pg_extension) GETSTRUCT(tuple))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	if (!OidIsValid(nspid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"promread\" is not installed in this database")));
	if (!callback_registered)
	{
		CacheRegisterRelcacheCallback(forget_namespace, (Datum) 0);
		callback_registered = true;
	}
	known_catalog = get_relname_relid(CATALOG_TABLE, nspid);
	if (OidIsValid(known_catalog))
		known_namespace = nspid;
	return nspid;
}

/* Open one of the extension's tables and find its index by name. */
Relation
PromCatalogOpenTable(const char *table, const char *index, LOCKMODE lockmode,
					 Oid *indexid)
{
	Oid			nspid = PromExtensionNamespace();
	Oid			relid = get_relname_relid(table, nspid);

	*indexid = get_relname_relid(index, nspid);
	if (!OidIsValid(relid) || !OidIsValid(*indexid))
		elog(ERROR, "promread table %s is missing", table);
	return table_open(relid, lockmode);
}

/* The OID that stands for a name in its lock: a hash of the name. */
static Oid
name_lock_id(const char *name)
{
	return (Oid) hash_bytes((const unsigned char *) name, (int) strlen(name));
}

/*
 * Take the lock of a name (a metric, or a metric family) of one of the
 * extension's tables, opened by the caller, until the transaction ends.
 * It is the lock of an object that is no object, the table's OID standing
 * for its class and a hash of the name for its OID: two names whose hashes
 * are equal only take turns.
 */
void
PromCatalogLockName(Relation rel, const char *name)
{
	LockDatabaseObject(RelationGetRelid(rel), name_lock_id(name), 0, ExclusiveLock);
}

/* Open the catalog table and find its index. */
static Relation
open_catalog(LOCKMODE lockmode, Oid *indexid)
{
	return PromCatalogOpenTable(CATALOG_TABLE, CATALOG_INDEX, lockmode, indexid);
}

/* Start a scan of the catalog, by metric name when one is given. */
static SysScanDesc
begin_catalog_scan(Relation rel, Oid indexid, const char *metric,
				   Snapshot snapshot, ScanKey key)
{
	if (metric != NULL)
		ScanKeyInit(key, Anum_metric, BTEqualStrategyNumber, F_TEXTEQ,
					CStringGetTextDatum(metric));
	return systable_beginscan(rel, indexid, metric != NULL, snapshot,
							  metric != NULL ? 1 : 0, key);
}

/* Decode a catalog tuple into an entry allocated in CurrentMemoryContext. */
static PromMetricEntry *
decode_entry(Relation rel, HeapTuple tuple)
{
	Datum		values[Natts_catalog];
	bool		isnull[Natts_catalog];
	PromMetricEntry *entry = palloc(sizeof(PromMetricEntry));
	Datum	   *labels;
	int			n;
	int			i;

	/* a catalog not updated to 0.3.1 yet lacks the last columns: NULL */
	if (RelationGetDescr(rel)->natts > Natts_catalog)
		elog(ERROR, "promread catalog has %d columns", RelationGetDescr(rel)->natts);
	memset(isnull, true, sizeof(isnull));
	heap_deform_tuple(tuple, RelationGetDescr(rel), values, isnull);
	for (i = 0; i < Anum_created_by_write - 1; i++)
		if (isnull[i])
			elog(ERROR, "promread catalog holds a NULL");
	entry->metric = TextDatumGetCString(values[Anum_metric - 1]);
	entry->relid = DatumGetObjectId(values[Anum_relation - 1]);
	entry->time_column = pstrdup(NameStr(*DatumGetName(values[Anum_time_column - 1])));
	entry->value_column = pstrdup(NameStr(*DatumGetName(values[Anum_value_column - 1])));
	deconstruct_array(DatumGetArrayTypeP(values[Anum_label_columns - 1]),
					  NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR,
					  &labels, NULL, &entry->nlabels);
	entry->label_columns = palloc(sizeof(char *) * Max(entry->nlabels, 1));
	for (i = 0; i < entry->nlabels; i++)
		entry->label_columns[i] = pstrdup(NameStr(*DatumGetName(labels[i])));
	/* without label names, each column holds the label of its name */
	entry->label_names = entry->label_columns;
	if (!isnull[Anum_label_names - 1])
	{
		deconstruct_array(DatumGetArrayTypeP(values[Anum_label_names - 1]),
						  TEXTOID, -1, false, TYPALIGN_INT, &labels, NULL, &n);
		if (n != entry->nlabels)
			elog(ERROR, "promread catalog entry of metric \"%s\" has %d label names for %d label columns",
				 entry->metric, n, entry->nlabels);
		entry->label_names = palloc(sizeof(char *) * Max(entry->nlabels, 1));
		for (i = 0; i < entry->nlabels; i++)
			entry->label_names[i] = TextDatumGetCString(labels[i]);
	}
	entry->overflow_column = isnull[Anum_overflow_column - 1] ? NULL :
		pstrdup(NameStr(*DatumGetName(values[Anum_overflow_column - 1])));
	entry->created_by_write = !isnull[Anum_created_by_write - 1] &&
		DatumGetBool(values[Anum_created_by_write - 1]);
	return entry;
}

/*
 * The catalog entries whose metric name matches every __name__ matcher of
 * the query, in no particular order.  An equality matcher is looked up by
 * index (and *named set: the query names its metric); the others are
 * evaluated on each registered name.  Whether an entry's relation still
 * exists is checked when it is scanned, under its lock.
 */
List *
PromCatalogLookup(const PromQuery *query, bool *named)
{
	const char *name_eq = NULL;
	Relation	rel;
	Oid			indexid;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Snapshot	snapshot;
	List	   *entries = NIL;
	int			i;

	*named = false;
	if (query->nmatchers == 0)
		return NIL;
	for (i = 0; i < query->nmatchers; i++)
	{
		const PromMatcher *m = &query->matchers[i];

		if (m->type == PROM_MATCH_EQ && strcmp(m->name, "__name__") == 0 &&
			(int) strlen(m->value) == m->value_len)
			name_eq = m->value;
	}
	*named = name_eq != NULL;

	snapshot = RegisterSnapshot(ActiveSnapshotSet() ? GetActiveSnapshot() :
								GetTransactionSnapshot());
	rel = open_catalog(AccessShareLock, &indexid);
	scan = begin_catalog_scan(rel, indexid, name_eq, snapshot, &key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		PromMetricEntry *entry = decode_entry(rel, tuple);
		bool		selected = true;

		for (i = 0; i < query->nmatchers && selected; i++)
		{
			const PromMatcher *m = &query->matchers[i];

			if (strcmp(m->name, "__name__") == 0)
				selected = PromMatcherMatches(m, entry->metric,
											  strlen(entry->metric));
		}
		if (selected)
			entries = lappend(entries, entry);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	UnregisterSnapshot(snapshot);
	return entries;
}

/*
 * Refuse to write the catalog in a read-only transaction or on a standby,
 * as PostgreSQL's own commands do (SQLSTATE 25006).
 */
static void
prevent_catalog_write_if_read_only(const char *function)
{
	PreventCommandIfReadOnly(function);
	PreventCommandDuringRecovery(function);
}

/* Raise an error unless the current user owns the relation. */
static void
check_owner(Oid relid)
{
	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER,
					   get_relkind_objtype(get_rel_relkind(relid)),
					   get_rel_name(relid));
}

/*
 * Raise an error unless the current user may replace or remove a metric's
 * entry: the owner of the relation it names, or a superuser.  The relation's
 * name and owner are read from one copy of its pg_class row (it is not
 * locked: a DROP waiting for the catalog would deadlock with us).  An entry
 * whose relation is gone may be replaced or removed by a superuser only.
 */
static void
check_entry_owner(const PromMetricEntry *entry, const char *action)
{
	HeapTuple	tuple;
	Form_pg_class form;

	if (superuser())
		return;
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(entry->relid));
	if (!HeapTupleIsValid(tuple))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be superuser to %s metric \"%s\"", action,
						entry->metric),
				 errdetail("The relation it was registered for no longer exists.")));
	form = (Form_pg_class) GETSTRUCT(tuple);
	if (!has_privs_of_role(GetUserId(), form->relowner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of relation %s to %s metric \"%s\"",
						NameStr(form->relname), action, entry->metric),
				 errdetail("Metric \"%s\" is registered for relation %s.",
						   entry->metric, NameStr(form->relname))));
	ReleaseSysCache(tuple);
}

/*
 * Lock a row of one of the extension's tables, found with snapshot, before
 * updating or deleting it; false when another transaction deleted it and
 * committed.  Writers of these tables hold the lock of the row's name, but
 * the event trigger prom_catalog_forget_dropped deletes the rows of a
 * dropped relation without it: its DELETE may be in progress (we wait for
 * it) or committed since our scan.  A row changed otherwise (an update
 * without the name's lock, which promread never makes) is a serialization
 * failure rather than an internal error.
 */
bool
PromCatalogLockRow(Relation rel, HeapTuple tuple, Snapshot snapshot)
{
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	TM_FailureData tmfd;
	TM_Result	result;

	result = table_tuple_lock(rel, &tuple->t_self, snapshot, slot,
							  GetCurrentCommandId(true), LockTupleExclusive,
							  LockWaitBlock, 0, &tmfd);
	ExecDropSingleTupleTableSlot(slot);
	if (result == TM_Ok)
		return true;
	if (result == TM_Deleted)
		return false;
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not change a row of \"%s\" changed by a concurrent transaction",
					RelationGetRelationName(rel)),
			 errhint("Try again.")));
	pg_unreachable();
}

/*
 * Insert a row into one of the extension's tables, opened and locked by the
 * caller, or replace the row of the same key (a text first column) when
 * may_replace says so (or is NULL), as committed now; then close the table,
 * its lock kept, and make the change visible.
 */
void
PromCatalogStoreRow(Relation rel, Oid indexid, const char *key_text, Datum *values,
					bool *isnull, bool (*may_replace) (Relation rel, HeapTuple old))
{
	HeapTuple	tuple = heap_form_tuple(RelationGetDescr(rel), values, isnull);
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	old;

	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_TEXTEQ, CStringGetTextDatum(key_text));
	scan = systable_beginscan(rel, indexid, true, snapshot, 1, &key);
	old = systable_getnext(scan);
	if (!HeapTupleIsValid(old) || !PromCatalogLockRow(rel, old, snapshot))
		CatalogTupleInsert(rel, tuple);
	else if (may_replace == NULL || may_replace(rel, old))
		CatalogTupleUpdate(rel, &old->t_self, tuple);
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, NoLock);
	CommandCounterIncrement();
}

/* A catalog entry is replaced by the owner of its relation only (or errors). */
static bool
may_replace_entry(Relation rel, HeapTuple old)
{
	check_entry_owner(decode_entry(rel, old), "replace");
	return true;
}

/*
 * One of the extension's tables that a version after the first added (the
 * exemplar and storage catalogs), opened with lockmode, or NULL when the
 * extension's objects predate it (a library newer than the extension's SQL
 * objects: then the table would be empty).
 */
Relation
PromCatalogOpenOptional(const char *table, const char *index, LOCKMODE lockmode,
						Oid *indexid)
{
	if (!OidIsValid(get_relname_relid(table, PromExtensionNamespace())))
		return NULL;
	return PromCatalogOpenTable(table, index, lockmode, indexid);
}

/* The exemplar catalog, opened with lockmode, or NULL (see above). */
static Relation
open_exemplar_catalog(LOCKMODE lockmode, Oid *indexid)
{
	return PromCatalogOpenOptional(EXEMPLAR_TABLE, EXEMPLAR_INDEX, lockmode, indexid);
}

/*
 * Remove a metric's row (its text first column) from the exemplar or the
 * storage catalog (the relations it names stay): a metric registered
 * again, or unregistered, is no longer the one whose exemplars or samples
 * they hold.  Runs with the metric's lock of the metric catalog, which
 * every writer of these catalogs holds.
 */
static void
forget_metric_row(const char *table, const char *index, const char *metric)
{
	Oid			indexid;
	Relation	rel = PromCatalogOpenOptional(table, index, PROM_CATALOG_WRITE_LOCK,
											  &indexid);
	ScanKeyData key;
	SysScanDesc scan;
	Snapshot	snapshot;
	HeapTuple	tuple;

	if (rel == NULL)
		return;
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_TEXTEQ,
				CStringGetTextDatum(metric));
	scan = systable_beginscan(rel, indexid, true, snapshot, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple) && PromCatalogLockRow(rel, tuple, snapshot))
		CatalogTupleDelete(rel, &tuple->t_self);
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, NoLock);
	CommandCounterIncrement();
}

/*
 * Run for a metric before its entry in chunk storage's catalog is forgotten
 * (storage/head.c's, set by PromStorageInit): storage/ calls this file, so
 * this file calls it only through the hook.
 */
PromForgetStorageFunction PromForgetStorageHook = NULL;

/* Forget a metric's exemplar table and chunk-storage tables (see above). */
static void
forget_metric_tables(const char *metric)
{
	if (PromForgetStorageHook != NULL)
		PromForgetStorageHook(metric);
	forget_metric_row(EXEMPLAR_TABLE, EXEMPLAR_INDEX, metric);
	forget_metric_row(STORAGE_TABLE, STORAGE_INDEX, metric);
}

/*
 * The exemplar table of a metric, as committed now, or InvalidOid: the
 * metric has none (it was registered by a user, not created by remote
 * write).
 */
Oid
PromExemplarCatalogFind(const char *metric)
{
	Oid			indexid;
	Relation	rel = open_exemplar_catalog(AccessShareLock, &indexid);
	ScanKeyData key;
	SysScanDesc scan;
	Snapshot	snapshot;
	HeapTuple	tuple;
	Oid			relid = InvalidOid;

	if (rel == NULL)
		return InvalidOid;
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	ScanKeyInit(&key, Anum_exemplar_metric, BTEqualStrategyNumber, F_TEXTEQ,
				CStringGetTextDatum(metric));
	scan = systable_beginscan(rel, indexid, true, snapshot, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool		isnull;
		Datum		value = heap_getattr(tuple, Anum_exemplar_relation,
										 RelationGetDescr(rel), &isnull);

		if (!isnull)
			relid = DatumGetObjectId(value);
	}
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	return relid;
}

/*
 * Take, until the transaction ends, the lock of a metric's name in the
 * exemplar catalog, under which its exemplar table is created once; false,
 * taking nothing, when the extension's objects predate the exemplar
 * catalog.  It is not the metric catalog's lock of the name, which a writer
 * adding label columns holds while it waits for the metric's table.
 */
bool
PromExemplarCatalogLock(const char *metric)
{
	Oid			indexid;
	Relation	rel = open_exemplar_catalog(PROM_CATALOG_WRITE_LOCK, &indexid);

	if (rel == NULL)
		return false;
	PromCatalogLockName(rel, metric);
	table_close(rel, NoLock);
	return true;
}

/*
 * Record the exemplar table that remote write created for a metric it
 * created, owned by the current user, under PromExemplarCatalogLock.
 */
void
PromExemplarCatalogStore(const char *metric, Oid relid)
{
	Oid			indexid;
	Relation	rel;
	Datum		values[Natts_exemplar];
	bool		isnull[Natts_exemplar] = {0};

	check_owner(relid);
	rel = open_exemplar_catalog(PROM_CATALOG_WRITE_LOCK, &indexid);
	values[Anum_exemplar_metric - 1] = CStringGetTextDatum(metric);
	values[Anum_exemplar_relation - 1] = ObjectIdGetDatum(relid);
	PromCatalogStoreRow(rel, indexid, metric, values, isnull, NULL);
}

/*
 * Insert or replace the catalog entry of a metric: its label columns, the
 * label each holds, and its column of overflow labels (NULL: none);
 * created: remote write created its relation, and adds a column for each
 * new label.
 */
static void
store_entry(const char *metric, Oid relid, const char *time_column,
			const char *value_column, const char *const *columns,
			const char *const *labels, int nlabels,
			const char *overflow_column, bool created)
{
	Relation	rel;
	Oid			indexid;
	Datum		values[Natts_catalog];
	bool		isnull[Natts_catalog] = {0};
	Datum	   *names;
	Datum	   *label_names;
	NameData	time_name;
	NameData	value_name;
	NameData	overflow_name;
	int			i;

	names = palloc(sizeof(Datum) * Max(nlabels, 1));
	label_names = palloc(sizeof(Datum) * Max(nlabels, 1));
	for (i = 0; i < nlabels; i++)
	{
		Name		name = palloc0(NAMEDATALEN);

		namestrcpy(name, columns[i]);
		names[i] = NameGetDatum(name);
		label_names[i] = CStringGetTextDatum(labels[i]);
	}
	namestrcpy(&time_name, time_column);
	namestrcpy(&value_name, value_column);
	values[Anum_metric - 1] = CStringGetTextDatum(metric);
	values[Anum_relation - 1] = ObjectIdGetDatum(relid);
	values[Anum_time_column - 1] = NameGetDatum(&time_name);
	values[Anum_value_column - 1] = NameGetDatum(&value_name);
	values[Anum_label_columns - 1] =
		PointerGetDatum(construct_array(names, nlabels, NAMEOID,
										NAMEDATALEN, false, TYPALIGN_CHAR));
	values[Anum_created_by_write - 1] = BoolGetDatum(created);
	values[Anum_label_names - 1] =
		PointerGetDatum(construct_array(label_names, nlabels, TEXTOID,
										-1, false, TYPALIGN_INT));
	isnull[Anum_overflow_column - 1] = overflow_column == NULL;
	if (overflow_column != NULL)
	{
		namestrcpy(&overflow_name, overflow_column);
		values[Anum_overflow_column - 1] = NameGetDatum(&overflow_name);
	}

	rel = open_catalog(PROM_CATALOG_WRITE_LOCK, &indexid);
	/* a catalog not updated to 0.3.1 yet keeps columns named as labels only */
	for (i = 0; i < nlabels && RelationGetDescr(rel)->natts < Natts_catalog; i++)
		if (overflow_column != NULL || strcmp(columns[i], labels[i]) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the metric catalog cannot keep label names before extension promread is updated"),
					 errdetail("Metric \"%s\" needs a column for label \"%s\" named otherwise, or a column of overflow labels.",
							   metric, labels[i]),
					 errhint("Run ALTER EXTENSION promread UPDATE.")));
	PromCatalogLockName(rel, metric);
	PromCatalogStoreRow(rel, indexid, metric, values, isnull, may_replace_entry);
	if (!created)
		forget_metric_tables(metric);
}

/*
 * prom_register(relation, metric, time_column, value_column, label_columns)
 * registers a relation as a metric and returns the metric name.
 */
Datum
prom_register(PG_FUNCTION_ARGS)
{
	Oid			relid;
	Relation	rel;
	char		relkind;
	char	   *metric;
	PromRegisteredColumns columns;
	PromMetricEntry *existing;

	prevent_catalog_write_if_read_only("prom_register()");
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("relation must not be NULL")));
	relid = PG_GETARG_OID(0);
	rel = try_relation_open(relid, AccessShareLock);
	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid),
				 errdetail("It was dropped while it was being registered.")));
	relkind = rel->rd_rel->relkind;
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE &&
		relkind != RELKIND_VIEW && relkind != RELKIND_MATVIEW &&
		relkind != RELKIND_FOREIGN_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" cannot be registered as a metric",
						RelationGetRelationName(rel)),
				 errdetail("Only tables, partitioned tables, views, materialized views and foreign tables can be registered.")));
	if (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("temporary relation \"%s\" cannot be registered as a metric",
						RelationGetRelationName(rel)),
				 errdetail("A temporary relation is dropped with its session without telling promread, and no other session can read it."),
				 errhint("Register a permanent or unlogged table, or a view over one.")));
	check_owner(relid);

	metric = PG_ARGISNULL(1) ? pstrdup(RelationGetRelationName(rel)) :
		text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (!PromIsValidMetricName(metric, strlen(metric)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("\"%s\" is not a valid Prometheus metric name", metric),
				 errdetail("Metric names must match [a-zA-Z_:][a-zA-Z0-9_:]*."),
				 errhint("Pass a valid name as metric.")));

	PromChooseRegisteredColumns(rel,
								PG_ARGISNULL(2) ? NULL : PG_GETARG_NAME(2),
								PG_ARGISNULL(3) ? NULL : PG_GETARG_NAME(3),
								PG_ARGISNULL(4) ? NULL : PG_GETARG_ARRAYTYPE_P(4),
								PromExtensionTypeOid("prom_histogram"), &columns);
	/* another role's entry is refused before the metric's lock is taken */
	existing = PromCatalogFind(metric);
	if (existing != NULL)
		check_entry_owner(existing, "replace");
	store_entry(metric, relid, columns.time_column, columns.value_column,
				columns.labels, columns.labels, columns.nlabels, NULL, false);
	relation_close(rel, AccessShareLock);
	PG_RETURN_TEXT_P(cstring_to_text(metric));
}

/*
 * prom_unregister(metric) removes a metric from the catalog; true if it was
 * registered.  Only the owner of its relation (or a superuser) may.  The
 * entry is looked up and its owner checked before the metric's lock is
 * taken, so that a call for nothing, or by another role, keeps no writer
 * waiting; then again under the lock.
 */
Datum
prom_unregister(PG_FUNCTION_ARGS)
{
	char	   *metric = text_to_cstring(PG_GETARG_TEXT_PP(0));
	PromMetricEntry *entry;
	Relation	rel;
	Oid			indexid;
	ScanKeyData key;
	SysScanDesc scan;
	Snapshot	snapshot;
	HeapTuple	tuple;
	bool		found = false;

	prevent_catalog_write_if_read_only("prom_unregister()");
	entry = PromCatalogFind(metric);
	if (entry == NULL)
		PG_RETURN_BOOL(false);
	check_entry_owner(entry, "unregister");

	rel = open_catalog(PROM_CATALOG_WRITE_LOCK, &indexid);
	PromCatalogLockName(rel, metric);
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	scan = begin_catalog_scan(rel, indexid, metric, snapshot, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		check_entry_owner(decode_entry(rel, tuple), "unregister");
		found = PromCatalogLockRow(rel, tuple, snapshot);
		if (found)
			CatalogTupleDelete(rel, &tuple->t_self);
	}
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, NoLock);
	CommandCounterIncrement();
	if (found)
		forget_metric_tables(metric);
	PG_RETURN_BOOL(found);
}

/*
 * The catalog entry of a metric, by name, as committed now (the latest
 * snapshot, so that a writer that waited for the catalog's write lock sees
 * what the writer before it committed); NULL when there is none.
 */
PromMetricEntry *
PromCatalogFind(const char *metric)
{
	Relation	rel;
	Oid			indexid;
	ScanKeyData key;
	SysScanDesc scan;
	Snapshot	snapshot;
	HeapTuple	tuple;
	PromMetricEntry *entry = NULL;

	rel = open_catalog(AccessShareLock, &indexid);
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	scan = begin_catalog_scan(rel, indexid, metric, snapshot, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		entry = decode_entry(rel, tuple);
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	return entry;
}

/*
 * The position of a label among a registration's label columns (that of the
 * column that holds it), or -1.
 */
int
PromCatalogLabelIndex(const PromMetricEntry *entry, const char *label)
{
	int			i;

	for (i = 0; i < entry->nlabels; i++)
		if (strcmp(entry->label_names[i], label) == 0)
			return i;
	return -1;
}

/* The schema-qualified, quoted name of a relation, for SQL text. */
char *
PromQuotedRelationName(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/*
 * Take a metric's lock in the catalog until the transaction ends, so that
 * two writers do not create the same metric, or add the same label, at
 * once; writers of other metrics do not wait for it.
 */
void
PromCatalogLockForWrite(const char *metric)
{
	Oid			indexid;
	Relation	rel;

	prevent_catalog_write_if_read_only("prom_remote_write()");
	rel = open_catalog(PROM_CATALOG_WRITE_LOCK, &indexid);
	PromCatalogLockName(rel, metric);
	table_close(rel, NoLock);
}

/*
 * Release a metric's lock taken by PromCatalogLockForWrite, when nothing was
 * changed under it: a writer that found the metric made meanwhile, or its
 * relation gone, lets other writers of the name go on at once.
 */
void
PromCatalogUnlockForWrite(const char *metric)
{
	Oid			catalog = get_relname_relid(CATALOG_TABLE, PromExtensionNamespace());

	UnlockDatabaseObject(catalog, name_lock_id(metric), 0, ExclusiveLock);
}

/*
 * Register (or register again, with more labels) a metric whose relation
 * remote write created: its label columns, the label each holds, and its
 * column of overflow labels (NULL: none); the current user must own the
 * relation.
 */
void
PromCatalogStoreCreated(const char *metric, Oid relid, const char *time_column,
						const char *value_column, const char *const *columns,
						const char *const *labels, int nlabels,
						const char *overflow_column)
{
	check_owner(relid);
	store_entry(metric, relid, time_column, value_column, columns, labels,
				nlabels, overflow_column, true);
}
