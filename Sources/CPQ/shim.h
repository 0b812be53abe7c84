#pragma once
#include <libpq-fe.h>

/* PG_DIAG_* are character macros Swift does not import as the int libpq wants. */
static inline char *pm_pq_sqlstate(const PGresult *r) { return PQresultErrorField(r, PG_DIAG_SQLSTATE); }
static inline char *pm_pq_primary_message(const PGresult *r) { return PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY); }

/* NOTICEs ("relation already exists, skipping") go to stderr by default: a daemon drops them. */
static void pm_pq_ignore_notice(void *arg, const char *message) { (void)arg; (void)message; }
static inline void pm_pq_quiet(PGconn *c) { PQsetNoticeProcessor(c, pm_pq_ignore_notice, 0); }
