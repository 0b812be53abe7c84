#pragma once
#include <libpq-fe.h>

/* PG_DIAG_SQLSTATE is a character macro Swift does not import as the int libpq wants. */
static inline char *pm_pq_sqlstate(const PGresult *r) { return PQresultErrorField(r, PG_DIAG_SQLSTATE); }

/* NOTICEs ("relation already exists, skipping") go to stderr by default: a daemon drops them. */
static inline void pm_pq_ignore_notice(void *arg, const char *message) { (void)arg; (void)message; }
static inline void pm_pq_quiet(PGconn *c) { PQsetNoticeProcessor(c, pm_pq_ignore_notice, 0); }
