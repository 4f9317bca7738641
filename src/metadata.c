/*-------------------------------------------------------------------------
 *
 * metadata.c
 *	  The metadata of metric families that remote write sends (type, help,
 *	  unit), kept in the extension's table prom_metric_metadata_catalog
 *	  (read through the view prom_metric_metadata), by the roles that may
 *	  write the family's metrics.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "miscadmin.h"
#include "promread.h"
#include "storage/storage.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#define METADATA_TABLE		"prom_metric_metadata_catalog"
#define METADATA_INDEX		"prom_metric_metadata_catalog_pkey"

/* Columns of the metadata table. */
enum
{
	Anum_metadata_metric = 1,
	Anum_metadata_type,
	Anum_metadata_help,
	Anum_metadata_unit,
	Anum_metadata_writer,
	Natts_metadata = Anum_metadata_writer
};

/*
 * The suffixes that the names of a family's metrics add to the family's
 * name: a counter's, a histogram's or a summary's series, an info metric's.
 */
static const char *const family_suffixes[] = {
	"", "_total", "_bucket", "_count", "_sum", "_created", "_info",
	"_gcount", "_gsum"
};

/* May the current user insert into a relation (all or some columns)? */
static bool
may_insert(Oid relid)
{
	Oid			user = GetUserId();

	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		return false;
	return pg_class_aclcheck(relid, user, ACL_INSERT) == ACLCHECK_OK ||
		pg_attribute_aclcheck_all(relid, user, ACL_INSERT, ACLMASK_ANY) == ACLCHECK_OK;
}

/*
 * May the current user write a metric family's metadata?  Only when at
 * least one of the family's metrics (the family's name, or it with one of
 * family_suffixes) is registered, and the user may insert into the
 * relation of every one that is (the head table of one in chunk storage),
 * as committed now.  A superuser may write
 * the metadata of any family with a registered metric.  So metadata is
 * written by who writes the metrics, and there is no more of it than there
 * are registered families.
 */
static bool
may_write_family(const char *family)
{
	bool		registered = false;
	bool		allowed = true;
	int			i;

	for (i = 0; i < (int) lengthof(family_suffixes) && allowed; i++)
	{
		char	   *name = psprintf("%s%s", family, family_suffixes[i]);
		PromMetricEntry *entry = PromCatalogFind(name);

		if (entry != NULL)
		{
			PromStorageEntry *storage = PromStorageLookup(name);

			registered = true;
			/* a metric in chunk storage is written into its head table */
			allowed = superuser() ||
				may_insert(storage != NULL ? storage->head : entry->relid);
		}
		pfree(name);
	}
	return registered && allowed;
}

/* Does a family's metadata, as committed now, already say this? */
static bool
metadata_unchanged(const char *family, const char *type, const char *help,
				   const char *unit)
{
	Relation	rel;
	Oid			indexid;
	ScanKeyData key;
	SysScanDesc scan;
	Snapshot	snapshot;
	HeapTuple	tuple;
	bool		same = false;

	rel = PromCatalogOpenTable(METADATA_TABLE, METADATA_INDEX, AccessShareLock,
							   &indexid);
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	ScanKeyInit(&key, Anum_metadata_metric, BTEqualStrategyNumber, F_TEXTEQ,
				CStringGetTextDatum(family));
	scan = systable_beginscan(rel, indexid, true, snapshot, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		Datum		values[Natts_metadata];
		bool		isnull[Natts_metadata];

		heap_deform_tuple(tuple, RelationGetDescr(rel), values, isnull);
		same = !isnull[Anum_metadata_type - 1] && !isnull[Anum_metadata_help - 1] &&
			!isnull[Anum_metadata_unit - 1] &&
			strcmp(TextDatumGetCString(values[Anum_metadata_type - 1]), type) == 0 &&
			strcmp(TextDatumGetCString(values[Anum_metadata_help - 1]), help) == 0 &&
			strcmp(TextDatumGetCString(values[Anum_metadata_unit - 1]), unit) == 0;
	}
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	return same;
}

/*
 * Keep the metadata of a metric family (its type, help and unit), as the
 * last remote write sent it, and the role that sent it; false when the
 * current user may not write it (may_write_family), and nothing is stored.
 * The right and whether anything changes are checked first, without the
 * family's lock; the right again under it, which writers of one family take
 * in turns (so that two do not insert one family).
 */
bool
PromMetadataStore(const char *family, const char *type, const char *help,
				  const char *unit)
{
	Relation	rel;
	Oid			indexid;
	Datum		values[Natts_metadata];
	bool		isnull[Natts_metadata] = {0};

	if (!may_write_family(family))
		return false;
	if (metadata_unchanged(family, type, help, unit))
		return true;

	values[Anum_metadata_metric - 1] = CStringGetTextDatum(family);
	values[Anum_metadata_type - 1] = CStringGetTextDatum(type);
	values[Anum_metadata_help - 1] = CStringGetTextDatum(help);
	values[Anum_metadata_unit - 1] = CStringGetTextDatum(unit);
	values[Anum_metadata_writer - 1] = ObjectIdGetDatum(GetUserId());

	rel = PromCatalogOpenTable(METADATA_TABLE, METADATA_INDEX,
							   PROM_CATALOG_WRITE_LOCK, &indexid);
	PromCatalogLockName(rel, family);
	if (!may_write_family(family))
	{
		table_close(rel, NoLock);
		return false;
	}
	PromCatalogStoreRow(rel, indexid, family, values, isnull, NULL);
	return true;
}
