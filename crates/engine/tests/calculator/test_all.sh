sh test_add.sh && sh test_mul.sh && sh test_neg.sh
