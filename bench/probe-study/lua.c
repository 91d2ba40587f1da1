/*
 * bench/probe-study/lua.c - the Lua 5.4.7 interpreter running bench.lua.
 *
 * Owns: the "lua" program: a fresh lua_State with the standard libraries runs bench.lua (read
 * before the runtime starts; STUDY_LUA_SCRIPT names it) and returns its integer checksum.
 * Lua is built with a fixed string-hash seed (luai_makeseed), so nothing in a run depends on
 * addresses or time. Its interpreter loop dispatches with computed gotos (LUA_USE_JUMPTABLE,
 * Lua's default with gcc and clang), which is what the probe pass sees.
 */
#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "study.h"

#ifndef STUDY_LUA_SCRIPT
#error "compile with -DSTUDY_LUA_SCRIPT=\"<path of bench.lua>\""
#endif

const char study_program[] = "lua";

static char *script;
static size_t script_len;

void study_prepare(void)
{
	FILE *f = fopen(STUDY_LUA_SCRIPT, "rb");
	if (!f || fseek(f, 0, SEEK_END) || (script_len = (size_t)ftell(f), fseek(f, 0, SEEK_SET))) {
		perror(STUDY_LUA_SCRIPT);
		exit(1);
	}
	script = malloc(script_len);
	if (!script || fread(script, 1, script_len, f) != script_len) {
		perror(STUDY_LUA_SCRIPT);
		exit(1);
	}
	fclose(f);
}

uint64_t work(void)
{
	lua_State *L = luaL_newstate();
	if (!L)
		abort();
	luaL_openlibs(L);
	if (luaL_loadbuffer(L, script, script_len, "bench.lua") != LUA_OK ||
	    lua_pcall(L, 0, 1, 0) != LUA_OK) {
		fprintf(stderr, "lua: %s\n", lua_tostring(L, -1));
		abort();
	}
	int ok;
	uint64_t h = (uint64_t)lua_tointegerx(L, -1, &ok);
	if (!ok) {
		fprintf(stderr, "lua: bench.lua returned no integer\n");
		abort();
	}
	lua_close(L);
	return study_mix(STUDY_HASH_SEED, h);
}
