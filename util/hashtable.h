/* hashtable.h: uthash for tilec. uthash's default hash (Jenkins) falls
 * through switch labels with comments that clang's -Wimplicit-fallthrough
 * does not accept; FNV-1a has no switch, so both gcc and clang (the
 * `make fuzz` build) compile every table warning-free. A file may define
 * HASH_FUNCTION itself before including this. A failed add never exits:
 * it leaves item->hh.tbl NULL (HASH_NONFATAL_OOM), which callers check. */
#ifndef TILEC_UTIL_HASHTABLE_H
#define TILEC_UTIL_HASHTABLE_H

#ifndef HASH_FUNCTION
#define HASH_FUNCTION(keyptr, keylen, hashv) HASH_FNV(keyptr, keylen, hashv)
#endif
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#endif
