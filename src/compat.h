/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  What differs between the PostgreSQL majors promread supports (14 to
 *	  18), in one place: each difference is given the newest major's
 *	  spelling, or the one the code uses, defined for the others.
 *
 * - 15 added InitMaterializedSRF (materialized set-returning functions);
 *   14 gets compat.c's version of it.  15 renamed
 *   EmitWarningsOnPlaceholders MarkGUCPrefixReserved, and added
 *   repalloc_extended, which PromReallocNoOOM stands for (on 14 an
 *   allocation, a copy of the old size's bytes and a free).
 * - 16 moved the varlena macros to varatt.h, and replaced pg_class_ownercheck and pg_namespace_aclcheck by
 *   object_ownercheck and object_aclcheck, and moved a range table entry's
 *   permissions (required privileges, columns, the role they are checked
 *   as) into the query's RTEPermissionInfo list: PromPermissionsOf and
 *   PromSetCheckAsUser reach them, PromCheckPermissions checks them (their
 *   users include executor/executor.h and parser/parse_relation.h).
 * - 15 added strtoi64 and strtou64; 14 gets them from strtoll and
 *   strtoull (64 bits on every platform PostgreSQL runs on).
 * - 16 made the JSON parser's callbacks return a JsonParseErrorType
 *   (PROM_JSON_CALLBACK, PROM_JSON_DONE), 17 gave makeJsonLexContextCstringLen
 *   the context to fill first (PromJsonLexer).
 * - 18 replaced the pg_attribute_noreturn() suffix by a pg_noreturn prefix
 *   (the code keeps the former, which GCC and Clang accept in both places)
 *   and removed lc_collate_is_c, which asks a collation's locale now.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_COMPAT_H
#define PROMREAD_COMPAT_H

#include "postgres.h"

#include "fmgr.h"

#if PG_VERSION_NUM < 140000
#error "promread needs PostgreSQL 14 or later"
#endif

#if PG_VERSION_NUM < 150000
#define MAT_SRF_USE_EXPECTED_DESC	0x01
#define MAT_SRF_BLESS				0x02
extern void InitMaterializedSRF(FunctionCallInfo fcinfo, bits32 flags);
#define MarkGUCPrefixReserved(prefix) EmitWarningsOnPlaceholders(prefix)
#define strtoi64(str, endptr, base) ((int64) strtoll((str), (endptr), (base)))
#define strtou64(str, endptr, base) ((uint64) strtoull((str), (endptr), (base)))
extern void *PromReallocNoOOM(void *pointer, Size old_size, Size size);
#else
#define PromReallocNoOOM(pointer, old_size, size) \
	repalloc_extended((pointer), (size), MCXT_ALLOC_NO_OOM)
#endif

#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#include "catalog/pg_class_d.h"
#include "catalog/pg_namespace_d.h"
#include "utils/acl.h"
#define pg_class_ownercheck(relid, roleid) \
	object_ownercheck(RelationRelationId, (relid), (roleid))
#define pg_namespace_aclcheck(nspid, roleid, mode) \
	object_aclcheck(NamespaceRelationId, (nspid), (roleid), (mode))
#define PromPermissionsOf(nsitem)	((nsitem)->p_perminfo)
#define PromCheckPermissions(pstate) \
	ExecCheckPermissions((pstate)->p_rtable, (pstate)->p_rteperminfos, true)
#define PromSetCheckAsUser(query, rte, role) \
	(getRTEPermissionInfo((query)->rteperminfos, (rte))->checkAsUser = (role))
#else
#define PromPermissionsOf(nsitem)	((nsitem)->p_rte)
#define PromCheckPermissions(pstate) ExecCheckRTPerms((pstate)->p_rtable, true)
#define PromSetCheckAsUser(query, rte, role) ((rte)->checkAsUser = (role))
#endif

/* A row's index entries (no speculative insertion, no arbiter index). */
#if PG_VERSION_NUM >= 160000
#define PromInsertIndexTuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL, false)
#else
#define PromInsertIndexTuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL)
#endif

#if PG_VERSION_NUM >= 160000
#define PROM_JSON_CALLBACK	JsonParseErrorType
#define PROM_JSON_DONE		return JSON_SUCCESS
#else
#define PROM_JSON_CALLBACK	void
#define PROM_JSON_DONE		return
#endif

#if PG_VERSION_NUM >= 170000
#define PromJsonLexer(text, len) \
	makeJsonLexContextCstringLen(NULL, (text), (len), GetDatabaseEncoding(), true)
#else
#define PromJsonLexer(text, len) \
	makeJsonLexContextCstringLen((text), (len), GetDatabaseEncoding(), true)
#endif

/* Does this transaction hold the lock in exactly this mode? */
#if PG_VERSION_NUM >= 170000
#define PromLockHeldByMe(tag, mode)	LockHeldByMe((tag), (mode), false)
#else
#define PromLockHeldByMe(tag, mode)	LockHeldByMe((tag), (mode))
#endif

#if PG_VERSION_NUM >= 180000 && !defined(pg_attribute_noreturn)
#if defined(__GNUC__) || defined(__clang__)
#define pg_attribute_noreturn() __attribute__((noreturn))
#else
#define pg_attribute_noreturn()
#endif
#endif

#if PG_VERSION_NUM >= 180000
#include "catalog/pg_collation_d.h"
#include "utils/pg_locale.h"

/* Does the collation sort as C does (bytes)?  An invalid one does not. */
static inline bool
lc_collate_is_c(Oid collation)
{
	if (!OidIsValid(collation))
		return false;
	if (collation == C_COLLATION_OID)
		return true;
	return pg_newlocale_from_collation(collation)->collate_is_c;
}
#endif

#endif							/* PROMREAD_COMPAT_H */
