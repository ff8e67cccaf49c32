out=$(sh mul.sh 2 3)
[ "$out" = 6 ] || { echo "mul 2 3 gave $out, expected 6"; exit 1; }
