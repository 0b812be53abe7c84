#pragma once
/* Debian's libxml2 is built with ICU and its encoding.h then includes ICU's headers,
 * which clash with the ICU copy Foundation brings (`U_MF_...` not in `UErrorCode`).
 * Only xmlCharEncodingHandler changes without it (two trailing ICU converter pointers);
 * photomemo never touches that struct, only pointers to it, so the layouts it reads
 * (xmlParserCtxt, xmlNode, xmlDoc) are the library's. */
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/tree.h>

/* xmlFree is a global function pointer Swift imports awkwardly. */
static inline void pm_xml_free(void *p) { xmlFree(p); }
