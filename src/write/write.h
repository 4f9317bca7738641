/*-------------------------------------------------------------------------
 *
 * write.h
 *	  What the rest of promread calls of remote write's folder: a group's
 *	  metric looked up, and a group written into chunk storage (as
 *	  prom_convert_metric does).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_WRITE_H
#define PROMREAD_WRITE_H

#include "write_request.h"

/* in remote_write.c */
extern PromMetricEntry *PromWriteGroupEntry(const PromWriteGroup *group);

/* in write_chunks.c */
struct PromStorageEntry;
extern bool PromWriteGroupChunks(const PromWriteGroup *group,
								 const PromMetricEntry *entry,
								 const struct PromStorageEntry *storage);

#endif							/* PROMREAD_WRITE_H */
