/*-------------------------------------------------------------------------
 *
 * write_trust.c
 *	  Whether remote write may write into a metric's relation: never into
 *	  one that would run the code of another role, not trusted, as the
 *	  writer.
 *
 * Triggers, rules, policies, defaults, constraints and index expressions
 * are written by the relation's owner and run, when a row is inserted, as
 * the inserting role, with its privileges.  Remote write writes into the
 * relation registered for a metric, whoever registered it: a role could
 * register a table of its own under a metric name nobody has written yet,
 * grant INSERT on it and have the writer run its code.  So remote write
 * writes into a relation only when its owner is trusted (the writer itself,
 * a superuser, or a role named in promread.write_trusted_owners), or when
 * writing into it runs no code of its owner's: it is a table or partitioned
 * table, and neither it nor any of its partitions of an untrusted owner has
 *  - an enabled trigger that fires on INSERT (not an internal one, as those
 *    of foreign keys),
 *  - a rule,
 *  - row-level security with a policy, for a writer that does not bypass it,
 *  - a generated column, a default of a column other than the time and
 *    value columns (a label absent from a request leaves its column to its
 *    default), a check constraint, an index expression or predicate, or a
 *    constraint of a column's domain, that calls a function other than
 *    PostgreSQL's own immutable ones.
 * Views and foreign tables of an untrusted owner are refused whole.  The
 * request is refused with 42501 (nothing of it is written), which
 * PostgREST answers with 403.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/transam.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "promread.h"
#include "write_internal.h"
#include "rewrite/rowsecurity.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
#include "utils/varlena.h"

/*
 * Is a relation owner trusted by the writer: the writer itself, a
 * superuser, or a role named in promread.write_trusted_owners?  Membership
 * is not trust: another member of the owner's group could write its code.
 */
static bool
owner_is_trusted(Oid owner)
{
	char	   *copy;
	List	   *names;
	ListCell   *lc;

	if (owner == GetUserId() || superuser_arg(owner))
		return true;
	copy = pstrdup(promread_write_trusted_owners ? promread_write_trusted_owners : "");
	if (!SplitIdentifierString(copy, ',', &names))
		return false;
	foreach(lc, names)
		if (get_role_oid((const char *) lfirst(lc), true) == owner)
			return true;
	return false;
}

/* Is a function one that runs no one's code: PostgreSQL's own, immutable? */
static bool
function_is_code(Oid funcid, void *context)
{
	return funcid >= FirstNormalObjectId ||
		func_volatile(funcid) != PROVOLATILE_IMMUTABLE;
}

/* Does an expression call a function that runs code (or a subquery)? */
static bool
expression_runs_code(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, SubLink) || IsA(node, Query))
		return true;
	if (check_functions_in_node(node, function_is_code, context))
		return true;
	return expression_tree_walker(node, expression_runs_code, context);
}

/* The same, for an expression stored as a node tree's text. */
static bool
stored_expression_runs_code(const char *text)
{
	return text != NULL && expression_runs_code(stringToNode(text), NULL);
}

/*
 * Does a constraint of a domain (or of a domain under it) call a function?
 * The reference to the domain's constraints lives in a context of its own:
 * InitDomainConstraintRef links it into its context's reset callbacks, so
 * it must be allocated there, living exactly as long as the context.
 */
static bool
domain_runs_code(Oid domain_type)
{
	MemoryContext context = AllocSetContextCreate(CurrentMemoryContext,
												  "promread domain constraints",
												  ALLOCSET_SMALL_SIZES);
	DomainConstraintRef *domain = MemoryContextAlloc(context, sizeof(DomainConstraintRef));
	bool		runs_code = false;
	ListCell   *c;

	InitDomainConstraintRef(domain_type, domain, context, false);
	foreach(c, domain->constraints)
		if (expression_runs_code((Node *) ((DomainConstraintState *) lfirst(c))->check_expr,
								 NULL))
			runs_code = true;
	MemoryContextDelete(context);
	return runs_code;
}

/*
 * Is a column one that every write of a metric writes into (a label column
 * is not written by a request whose series lack the label: its default is
 * evaluated)?
 */
static bool
column_is_written(const PromMetricEntry *entry, const char *column)
{
	return strcmp(column, entry->time_column) == 0 ||
		strcmp(column, entry->value_column) == 0;
}

/*
 * What of a table's own (not a trusted owner's) runs as the inserting
 * role, for an error's detail; NULL when nothing does.
 */
static const char *
table_code(Relation rel, const PromMetricEntry *entry)
{
	TupleDesc	desc = RelationGetDescr(rel);
	TupleConstr *constr = desc->constr;
	List	   *indexes;
	ListCell   *lc;
	int			i;

	if (rel->trigdesc != NULL)
		for (i = 0; i < rel->trigdesc->numtriggers; i++)
		{
			const Trigger *trigger = &rel->trigdesc->triggers[i];

			if (!trigger->tgisinternal && trigger->tgenabled != TRIGGER_DISABLED &&
				TRIGGER_FOR_INSERT(trigger->tgtype))
				return "a trigger";
		}
	if (rel->rd_rules != NULL)
		return "a rule";
	if (rel->rd_rsdesc != NULL && rel->rd_rsdesc->policies != NIL &&
		check_enable_rls(RelationGetRelid(rel), InvalidOid, true) == RLS_ENABLED)
		return "a row-level security policy";

	for (i = 0; constr != NULL && i < constr->num_defval; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, constr->defval[i].adnum - 1);

		if ((att->attgenerated || !column_is_written(entry, NameStr(att->attname))) &&
			stored_expression_runs_code(constr->defval[i].adbin))
			return "a column default or generated column";
	}
	for (i = 0; constr != NULL && i < constr->num_check; i++)
		if (stored_expression_runs_code(constr->check[i].ccbin))
			return "a check constraint";
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && getBaseType(att->atttypid) != att->atttypid &&
			domain_runs_code(att->atttypid))
			return "a domain constraint";
	}

	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		bool		isnull;
		Datum		datum;
		bool		code = false;

		if (!HeapTupleIsValid(tuple))
			continue;
		datum = SysCacheGetAttr(INDEXRELID, tuple, Anum_pg_index_indexprs, &isnull);
		if (!isnull)
			code = stored_expression_runs_code(TextDatumGetCString(datum));
		datum = SysCacheGetAttr(INDEXRELID, tuple, Anum_pg_index_indpred, &isnull);
		if (!isnull && !code)
			code = stored_expression_runs_code(TextDatumGetCString(datum));
		ReleaseSysCache(tuple);
		if (code)
			return "an index expression or predicate";
	}
	return NULL;
}

/* Refuse (42501) to write a metric into one relation, open (see below). */
static void
check_relation(Relation part, const PromMetricEntry *entry)
{
	Oid			owner = part->rd_rel->relowner;
	char		relkind = part->rd_rel->relkind;
	const char *code = NULL;

	if (!owner_is_trusted(owner))
	{
		if (relkind == RELKIND_VIEW)
			code = "the view's query, rules and triggers";
		else if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
			code = "a foreign table's write";
		else
			code = table_code(part, entry);
	}
	if (code != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("remote write does not write metric \"%s\" into relation %s, owned by role \"%s\"",
						entry->metric, PromQuotedRelationName(RelationGetRelid(part)),
						GetUserNameFromId(owner, false)),
				 errdetail("Writing into it would run %s of role \"%s\" as role \"%s\".",
						   code, GetUserNameFromId(owner, false),
						   GetUserNameFromId(GetUserId(), false)),
				 errhint("A superuser can add role \"%s\" to promread.write_trusted_owners if it is trusted; otherwise register the metric for a relation of a trusted role.",
						 GetUserNameFromId(owner, false))));
}

/*
 * Refuse (42501) to write a metric into its relation, locked by the caller,
 * when that would run the code of a role the writer does not trust as the
 * writer; see the file's header for the rule.  The partitions of a
 * partitioned table are locked as the write will lock them, so that no
 * trigger or policy is added between this check and the write.
 */
void
PromCheckWriteTrusted(Relation rel, const PromMetricEntry *entry)
{
	List	   *relids;
	ListCell   *lc;

	if (rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
	{
		check_relation(rel, entry);
		return;
	}
	relids = find_all_inheritors(RelationGetRelid(rel), RowExclusiveLock, NULL);
	foreach(lc, relids)
	{
		Relation	part = lfirst_oid(lc) == RelationGetRelid(rel) ? rel :
			relation_open(lfirst_oid(lc), NoLock);

		check_relation(part, entry);
		if (part != rel)
			relation_close(part, NoLock);
	}
}

/*
 * PromCheckWriteTrusted for a partitioned table (locked) of which the write
 * reaches the given partitions alone, which the caller has locked as the
 * write will lock them: the table and those.
 */
void
PromCheckWriteTrustedPartitions(Relation rel, const Oid *partitions, int npartitions,
								const PromMetricEntry *entry)
{
	int			i;

	check_relation(rel, entry);
	for (i = 0; i < npartitions; i++)
	{
		Relation	part = relation_open(partitions[i], NoLock);

		check_relation(part, entry);
		relation_close(part, NoLock);
	}
}
