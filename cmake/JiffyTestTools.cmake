# cmake/JiffyTestTools.cmake - tests that need a program found when CMake configures (python3,
# redis-cli, bash, cargo, go, doxygen, FileCheck, ...). When one is missing the test is still
# registered, as a test that fails naming the program and how to install it: a missing tool is a
# visible failure in ctest (and CI), never a test quietly left out (issue 16 §8).
#
# jiffy_require_tools(<ok-var> TESTS <test>... TOOLS <program>=<variable>... [LABELS <label>...])
#   <variable> holds find_program()'s (or find_package()'s) result for <program>. Sets <ok-var>
#   TRUE when every one was found: the caller then registers <tests> as usual. Otherwise sets it
#   FALSE, registers each of <tests> as a failing test (cmake/JiffyMissingTool.cmake prints the
#   message) with <labels>, and warns at configure time.
include_guard(GLOBAL)

function(jiffy_require_tools ok)
	cmake_parse_arguments(R "" "" "TESTS;TOOLS;LABELS" ${ARGN})
	# How to get each program (scripts/deps.sh build installs what Debian packages; bench: go).
	# (Here, not at file scope: include_guard(GLOBAL) reads this file in one directory only.)
	set(_jf_hint_python3 "apt-get install python3")
	set(_jf_hint_bash "apt-get install bash")
	set(_jf_hint_redis-cli "scripts/deps.sh build (apt-get install redis-tools)")
	set(_jf_hint_redis-benchmark "scripts/deps.sh build (apt-get install redis-tools)")
	set(_jf_hint_cargo "a Rust toolchain: https://rustup.rs (cargo in PATH or ~/.cargo/bin)")
	set(_jf_hint_go "scripts/deps.sh bench (apt-get install golang-go, or Go in /usr/local/go)")
	set(_jf_hint_doxygen "scripts/deps.sh build (apt-get install doxygen)")
	set(_jf_hint_spin "scripts/deps.sh build (apt-get install spin)")
	set(_jf_hint_FileCheck "scripts/deps.sh build (llvm-14-dev brings FileCheck-14)")
	set(_jf_hint_clang-14 "scripts/deps.sh build (apt-get install clang-14 llvm-14-dev)")
	set(_jf_hint_clang++-14 "scripts/deps.sh build (apt-get install clang-14 llvm-14-dev)")
	set(_jf_hint_LLVM-14 "scripts/deps.sh build (apt-get install llvm-14-dev)")
	set(missing "")
	set(how "")
	foreach(pair ${R_TOOLS})
		string(FIND "${pair}" "=" eq)
		string(SUBSTRING "${pair}" 0 ${eq} tool)
		math(EXPR eq "${eq} + 1")
		string(SUBSTRING "${pair}" ${eq} -1 var)
		if(NOT ${var})
			list(APPEND missing ${tool})
			if(DEFINED _jf_hint_${tool})
				string(APPEND how " ${tool}: ${_jf_hint_${tool}}.")
			endif()
		endif()
	endforeach()
	if(NOT missing)
		set(${ok} TRUE PARENT_SCOPE)
		return()
	endif()
	set(${ok} FALSE PARENT_SCOPE)
	string(REPLACE ";" ", " names "${missing}")
	foreach(test ${R_TESTS})
		set(msg "${test}: needs ${names}, not found when CMake configured this build. Install it:${how} Then configure again (cmake, or make).")
		add_test(NAME ${test} COMMAND ${CMAKE_COMMAND} "-DJIFFY_MISSING_TOOL=${msg}"
			-P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/JiffyMissingTool.cmake)
		set_tests_properties(${test} PROPERTIES TIMEOUT 30 LABELS "${R_LABELS}")
	endforeach()
	string(REPLACE ";" " " tests "${R_TESTS}")
	message(WARNING "${tests}: needs ${names} (not found):${how} Registered to fail until then.")
endfunction()
