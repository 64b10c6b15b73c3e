// hiredis's synchronous API. Only the non-variadic calls are used from Swift (redisCommandArgv, not redisCommand).
#include <hiredis/hiredis.h>
