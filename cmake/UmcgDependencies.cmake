# SPDX-License-Identifier: MIT
#
# External dependencies found through pkg-config. A missing one stops the
# configuration with the name of the Debian package that provides it.
#
# Imported targets:
#   PkgConfig::UMCG_CHECK  Check, when UMCG_BUILD_TESTS
#
# The library itself needs nothing beyond glibc and pthreads. liburing is
# not looked for: no source file uses it yet, and configure must not fail
# on a package that the build does not use. The io_uring layer will add
# it here when it lands.

if(NOT UMCG_BUILD_TESTS)
	return()
endif()

find_package(PkgConfig QUIET)
if(NOT PKG_CONFIG_FOUND)
	message(FATAL_ERROR
		"pkg-config was not found (it locates Check). "
		"On Debian or Ubuntu: apt-get install pkg-config")
endif()

if(UMCG_BUILD_TESTS)
	# Debian's check.pc requires libsubunit, which libsubunit-dev provides.
	pkg_check_modules(UMCG_CHECK IMPORTED_TARGET check)
	if(NOT UMCG_CHECK_FOUND)
		message(FATAL_ERROR
			"Check, the unit-test framework of the test suites, was not found "
			"(pkg-config modules 'check' and 'libsubunit'). "
			"On Debian or Ubuntu: apt-get install check libsubunit-dev "
			"-- or configure with -DUMCG_BUILD_TESTS=OFF")
	endif()
endif()
