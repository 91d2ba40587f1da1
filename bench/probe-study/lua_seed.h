/*
 * bench/probe-study/lua_seed.h - force-included into every Lua source file (-include).
 *
 * Lua seeds its string hashes from the time and addresses (lstate.c, luai_makeseed) unless the
 * build defines the seed: a fixed one makes every run hash, allocate and collect the same way.
 */
#define luai_makeseed(L) ((unsigned int)0x5eed1234u)
