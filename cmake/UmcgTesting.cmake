# SPDX-License-Identifier: MIT
#
# How libumcg registers its CTest tests.
#
# Every test has a timeout. Sanitized builds run several times slower, and
# UMCG_STRESS=1 makes the suites loop longer, so both scale the timeouts:
# CTest's, and Check's per-case ones through CK_TIMEOUT_MULTIPLIER.

set(UMCG_TEST_TIMEOUT_FACTOR 1)
if(UMCG_SANITIZE_ADDRESS)
	set(UMCG_TEST_TIMEOUT_FACTOR 3)
elseif(UMCG_SANITIZE_THREAD)
	set(UMCG_TEST_TIMEOUT_FACTOR 5)
endif()
# The suites loop ten times longer under UMCG_STRESS=1 (tests/harness.h).
if(UMCG_STRESS)
	math(EXPR UMCG_TEST_TIMEOUT_FACTOR "${UMCG_TEST_TIMEOUT_FACTOR} * 10")
endif()

set(UMCG_TEST_ENVIRONMENT "")
if(UMCG_TEST_TIMEOUT_FACTOR GREATER 1)
	list(APPEND UMCG_TEST_ENVIRONMENT "CK_TIMEOUT_MULTIPLIER=${UMCG_TEST_TIMEOUT_FACTOR}")
endif()
if(UMCG_STRESS)
	list(APPEND UMCG_TEST_ENVIRONMENT "UMCG_STRESS=1")
endif()
if(UMCG_SANITIZE_ADDRESS)
	list(APPEND UMCG_TEST_ENVIRONMENT "UBSAN_OPTIONS=print_stacktrace=1")
elseif(UMCG_SANITIZE_THREAD)
	list(APPEND UMCG_TEST_ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1")
endif()

# umcg_add_test(<name> COMMAND <command> [<arg>...] TIMEOUT <seconds>
#               [SKIP_RETURN_CODE <code>] [ENVIRONMENT <VAR=value>...]
#               [LABELS <label>...] [RUN_SERIAL])
#
# add_test() with the project's environment added and TIMEOUT (required)
# scaled by UMCG_TEST_TIMEOUT_FACTOR. RUN_SERIAL: CTest runs no other test
# beside this one, even with -j (for suites that need every CPU).
function(umcg_add_test name)
	cmake_parse_arguments(PARSE_ARGV 1 arg "RUN_SERIAL" "TIMEOUT;SKIP_RETURN_CODE"
		"COMMAND;ENVIRONMENT;LABELS")
	if(arg_UNPARSED_ARGUMENTS)
		message(FATAL_ERROR "umcg_add_test(${name}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
	endif()
	if(NOT arg_COMMAND)
		message(FATAL_ERROR "umcg_add_test(${name}): COMMAND is required")
	endif()
	if(NOT arg_TIMEOUT MATCHES "^[1-9][0-9]*$")
		message(FATAL_ERROR "umcg_add_test(${name}): TIMEOUT <seconds> is required")
	endif()

	add_test(NAME ${name} COMMAND ${arg_COMMAND})
	math(EXPR timeout "${arg_TIMEOUT} * ${UMCG_TEST_TIMEOUT_FACTOR}")
	set(environment ${UMCG_TEST_ENVIRONMENT} ${arg_ENVIRONMENT})
	set_tests_properties(${name} PROPERTIES TIMEOUT ${timeout})
	if(environment)
		set_tests_properties(${name} PROPERTIES ENVIRONMENT "${environment}")
	endif()
	if(arg_LABELS)
		set_tests_properties(${name} PROPERTIES LABELS "${arg_LABELS}")
	endif()
	if(arg_RUN_SERIAL)
		set_tests_properties(${name} PROPERTIES RUN_SERIAL TRUE)
	endif()
	if(DEFINED arg_SKIP_RETURN_CODE)
		set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE ${arg_SKIP_RETURN_CODE})
	endif()
endfunction()
