# SPDX-License-Identifier: MIT
#
# The language level and warnings every target of libumcg is built with.

# umcg_target_defaults(<target>)
#
# C11 without GNU extensions (sources that need GNU interfaces get
# _GNU_SOURCE, which glibc honours under -std=c11), -Wall -Wextra, and
# -Werror when UMCG_WERROR is on (the ci preset).
function(umcg_target_defaults target)
	set_target_properties(${target} PROPERTIES
		C_STANDARD 11
		C_STANDARD_REQUIRED ON
		C_EXTENSIONS OFF)
	target_compile_options(${target} PRIVATE
		-Wall -Wextra
		$<$<BOOL:${UMCG_WERROR}>:-Werror>)
endfunction()
